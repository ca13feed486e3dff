"""An answer other than 200, in OpenAI's error shape, and whether a client
may retry it: the official SDKs retry a 409 and every 5xx unless the answer
says ``x-should-retry: false``, and a retry of a run that failed, of one that
was cancelled, or of a request that conflicts with its session's state would
run the app again (its tools with side effects included) or conflict again.
"""

from __future__ import annotations

import seamkit

__all__ = ["RETRY_HEADER", "ApiError", "error_body"]

RETRY_HEADER = "x-should-retry"
"""The header the official OpenAI SDKs read before retrying an answer."""

_RETRY_IS_SAFE = frozenset({503})
"""The statuses of 409 and 5xx answers a blind retry may repeat: the app is
not ready yet, nothing ran."""


class ApiError(seamkit.SeamkitError):
    """An answer other than 200, in OpenAI's error shape: ``status`` and the
    body's ``message``, ``type``, ``param`` and ``code``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, object]:
        """The JSON body: ``{"error": {message, type, param, code}}``."""
        return error_body(self.message, self.type, self.param, self.code)

    def headers(self) -> dict[str, str]:
        """The answer's headers: ``x-should-retry: false`` on a 409 or a 5xx
        that a retry must not repeat blindly; ``connection: close`` on a 408."""
        blind = self.status == 409 or self.status >= 500
        headers = {RETRY_HEADER: "false"} if blind and self.status not in _RETRY_IS_SAFE else {}
        if self.status == 408:  # a body too slow: the connection is not reused
            headers["connection"] = "close"
        return headers


def error_body(
    message: str, type: str, param: str | None = None, code: str | None = None
) -> dict[str, object]:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}
