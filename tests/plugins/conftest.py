"""Fixtures shared by the plugin tests: ``litellm_bin`` (LiteLLM's proxy,
installed once per test session for every module that starts one)."""

from tests.plugins.litellm_proxy import litellm_bin

__all__ = ["litellm_bin"]
