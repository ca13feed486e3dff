"""The exceptions of seamkit-tool-service.

A call that fails on the client side (a time-out, a service that cannot be
reached, a malformed reply) raises `ToolServiceError` inside the plugin; the
tool turns it into the result the model sees, ``Error: <type>: <message>``,
so no failure of a service ever crashes a run.
"""

from __future__ import annotations

from seamkit import SeamkitError

__all__ = ["EnvelopeError", "ToolServiceError"]


class ToolServiceError(SeamkitError):
    """Raised when a call to a tool service fails before the service could
    answer it: ``error_type`` is ``Timeout``, ``Unavailable`` or
    ``BadReply``; ``service`` names the service's id."""

    def __init__(
        self, error_type: str, message: str, *, service: str = "", hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.error_type = error_type
        self.service = service


class EnvelopeError(ToolServiceError):
    """Raised when bytes on the wire are not a well-formed envelope (not
    JSON, not an object, a field missing or of the wrong type)."""

    def __init__(self, message: str, *, service: str = "") -> None:
        super().__init__("BadReply", message, service=service)
