"""The command line: the ``seamkit`` group, the app and session commands,
what a signal does to them, and the plugin scaffold."""
