"""A user-profile tool for the example, used by its own name (no toolset)."""

import seamkit


@seamkit.tool
def user_profile(user: str) -> dict[str, str]:
    """A user's profile."""
    return {"user": user, "language": "en"}
