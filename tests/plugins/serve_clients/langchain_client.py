"""LangChain's ``ChatOpenAI`` (``langchain-openai``) against ``seamkit serve``."""

from __future__ import annotations

from typing import Any

from _common import API_KEY, BASE_URL, MODEL, QUESTION, SESSION, Record, add, check, report
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

RESPONSES = False
"""Whether ``ChatOpenAI`` speaks the Responses API (``use_responses_api=True``)."""


def llm(**headers: str) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL,
        base_url=BASE_URL,
        api_key=API_KEY,
        max_retries=0,
        default_headers=headers,
        use_responses_api=RESPONSES,
    )


def text(content: Any) -> str:
    """A message's text: a string, or (with the Responses API) its text blocks."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def session() -> list[str]:
    """Two turns in one seamkit session: the client resends the conversation."""
    sessioned = llm(**SESSION)
    asked = [HumanMessage("one")]
    first = sessioned.invoke(asked)
    second = sessioned.invoke([*asked, first, HumanMessage("two")])
    return [text(first.content), text(second.content)]


def round_trip() -> dict[str, Any]:
    """``bind_tools``, run the tool the model called, a ``ToolMessage`` back."""
    add_tool = tool(add)
    bound = llm().bind_tools([add_tool])
    asked = [HumanMessage("What is 2 + 3?")]
    first = bound.invoke(asked)
    calls = [{"name": c["name"], "args": c["args"]} for c in first.tool_calls]
    results = [
        ToolMessage(content=str(add_tool.invoke(c["args"])), tool_call_id=c["id"])
        for c in first.tool_calls
    ]
    final = bound.invoke([*asked, first, *results])
    return {"calls": calls, "text": text(final.content)}


def main() -> None:
    global RESPONSES
    name = check()
    if name.startswith("responses_"):
        RESPONSES, name = True, name.removeprefix("responses_")
    match name:
        case "chat":
            report(text(llm().invoke(QUESTION).content))
        case "stream":
            report([text(chunk.content) for chunk in llm().stream(QUESTION) if text(chunk.content)])
        case "structured":
            record = llm().with_structured_output(Record, method="json_schema").invoke(QUESTION)
            report(record.model_dump())  # type: ignore[union-attr]
        case "structured_tools":
            shaped = llm().with_structured_output(Record, method="function_calling")
            report(shaped.invoke(QUESTION).model_dump())  # type: ignore[union-attr]
        case "session":
            report(session())
        case "tool_round_trip":
            report(round_trip())
        case other:
            raise SystemExit(f"no check {other!r}")


main()
