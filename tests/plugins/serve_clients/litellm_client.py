"""LiteLLM as a client (``litellm.completion``, its ``openai/`` route) against ``seamkit serve``."""

from __future__ import annotations

import json
from typing import Any

import litellm
from _common import API_KEY, BASE_URL, MODEL, QUESTION, SESSION, Record, add, check, report

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


def complete(messages: list[dict[str, Any]], **options: Any) -> Any:
    return litellm.completion(
        model=f"openai/{MODEL}",
        api_base=BASE_URL,
        api_key=API_KEY,
        messages=messages,
        num_retries=0,
        max_retries=0,
        **options,
    )


def ask(**options: Any) -> Any:
    return complete([{"role": "user", "content": QUESTION}], **options)


def session() -> list[str]:
    """Two turns in one seamkit session: the client resends the conversation."""
    asked: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
    first = complete(asked, extra_headers=SESSION).choices[0].message
    again = [*asked, {"role": "assistant", "content": first.content}]
    second = complete([*again, {"role": "user", "content": "two"}], extra_headers=SESSION)
    return [first.content, second.choices[0].message.content]


def round_trip() -> dict[str, Any]:
    """``tools=``, run the call, a ``tool`` message back."""
    asked: list[dict[str, Any]] = [{"role": "user", "content": "What is 2 + 3?"}]
    first = complete(asked, tools=[ADD_TOOL]).choices[0].message
    calls = [
        {"name": c.function.name, "args": json.loads(c.function.arguments)}
        for c in first.tool_calls or []
    ]
    results = [
        {"role": "tool", "tool_call_id": c.id, "content": str(add(**call["args"]))}
        for c, call in zip(first.tool_calls or [], calls, strict=True)
    ]
    final = complete([*asked, first.model_dump(), *results], tools=[ADD_TOOL])
    return {"calls": calls, "text": final.choices[0].message.content}


def main() -> None:
    match check():
        case "chat":
            report(ask().choices[0].message.content)
        case "stream":
            pieces = [chunk.choices[0].delta.content for chunk in ask(stream=True) if chunk.choices]
            report([piece for piece in pieces if piece])
        case "structured":
            answer = ask(response_format=Record).choices[0].message.content
            report(Record.model_validate_json(answer).model_dump())
        case "session":
            report(session())
        case "tool_round_trip":
            report(round_trip())
        case other:
            raise SystemExit(f"no check {other!r}")


main()
