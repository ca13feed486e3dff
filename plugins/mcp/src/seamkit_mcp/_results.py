"""An MCP ``tools/call`` result as the model reads it: text blocks as they
are, structured content as JSON when there is no text, every other kind of
block described in a line (an image is never dropped silently), and an
``isError`` result as an error result."""

from __future__ import annotations

import base64
import json
from typing import Any

from seamkit import ToolResult

__all__ = ["describe_block", "to_result"]


def _size(data: object) -> str:
    if not isinstance(data, str):
        return "no data"
    try:
        return f"{len(base64.b64decode(data, validate=False)):,} bytes"
    except ValueError:
        return f"{len(data):,} characters of base64"


def describe_block(block: Any) -> str:
    """One content block as text."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", None) or "unknown type"
        return f"[{kind}: {mime}, {_size(getattr(block, 'data', None))}; not shown to the model]"
    if kind == "resource_link":
        name = getattr(block, "name", "") or ""
        return f"[resource link: {getattr(block, 'uri', '')}{f' ({name})' if name else ''}]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        mime = getattr(resource, "mime_type", None) or "unknown type"
        uri = getattr(resource, "uri", "")
        return f"[resource: {uri}, {mime}, {_size(getattr(resource, 'blob', None))}]"
    return f"[a {kind or 'content'} block this client does not show]"


def to_result(result: Any) -> ToolResult | str:
    """The tool result of an MCP ``CallToolResult``."""
    text = "\n".join(describe_block(block) for block in result.content or ())
    structured = getattr(result, "structured_content", None)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    if getattr(result, "is_error", False):
        text = text or "the tool failed and said nothing"
        return ToolResult.error(text if text.lower().startswith("error") else f"Error: {text}")
    return text
