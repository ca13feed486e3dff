"""An MCP ``tools/call`` result as the model reads it: text blocks as they
are, structured content as JSON when there is no text, every other kind of
block described in a line (an image is never dropped silently), and an
``isError`` result as an error result; secrets given are masked."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from seamkit import Secret, ToolResult, redact

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = ["describe_block", "to_result"]


def _size(data: object) -> str:
    if not isinstance(data, str):
        return "no data"
    try:
        return f"{len(base64.b64decode(data, validate=False)):,} bytes"
    except ValueError:
        return f"{len(data):,} characters of base64"


def describe_block(block: ContentBlock) -> str:
    """One content block as text."""
    if block.type == "text":
        return block.text
    if block.type in ("image", "audio"):
        mime = block.mime_type or "unknown type"
        return f"[{block.type}: {mime}, {_size(block.data)}; not shown to the model]"
    if block.type == "resource_link":
        name = f" ({block.name})" if block.name else ""
        return f"[resource link: {block.uri}{name}]"
    if block.type == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        mime = resource.mime_type or "unknown type"
        blob = getattr(resource, "blob", None)
        return f"[resource: {resource.uri}, {mime}, {_size(blob)}]"
    kind = getattr(block, "type", None)  # a kind of block newer than this client
    return f"[a {kind or 'content'} block this client does not show]"


def to_result(
    result: CallToolResult, *, secrets: Iterable[str | Secret[str]] = ()
) -> ToolResult | str:
    """The tool result of an MCP ``CallToolResult``, with ``secrets``
    (plain texts or `seamkit.Secret` objects) masked as ``***``."""
    text = "\n".join(describe_block(block) for block in result.content or ())
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    secrets = tuple(secrets)
    if secrets:
        text = redact(text, secrets)
    if result.is_error:
        text = text or "the tool failed and said nothing"
        return ToolResult.error(text if text.lower().startswith("error") else f"Error: {text}")
    return text
