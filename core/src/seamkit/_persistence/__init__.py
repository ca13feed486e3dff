"""Persistence: the session stores, and the recovery file a failed save leaves."""
