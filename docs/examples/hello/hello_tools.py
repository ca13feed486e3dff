"""Tools of the example app (toolset ``calc``)."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


add.__seamkit_tool__ = True  # type: ignore[attr-defined]
