"""The extract example in code: ``Agent(..., output=Invoice)``, streamed.

It prints each partial value of the answer as it arrives (`OutputDelta`:
the fields complete so far), says so when an answer fails and its partials
are dropped (`OutputRetry`), then prints the validated `Invoice`. An
``on_output`` hook checks what the schema cannot: that the total is the sum
of the lines.

    python docs/examples/extract/extract.py                   # the scripted model
    python docs/examples/extract/extract.py --mode prompted   # tool, native, prompted, auto
    python docs/examples/extract/extract.py --model openai:gpt-4o-mini   # OPENAI_API_KEY
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import seamkit
from invoice import Invoice
from seamkit import stream as S
from seamkit.flow import Continue, OutputFlow, Retry

HERE = Path(__file__).resolve().parent
TEXT = (
    "Hi, please bill Ada Lovelace (ada@example.org) for two notebooks at "
    "3.50 EUR each and one fountain pen at 24 EUR, so 31 EUR in all."
)


class TotalCheck:
    """A business check as an ``on_output`` hook: the total must be the sum
    of the lines, or the model is told so and answers again (within the
    output's ``retries``)."""

    name = "total-check"

    @seamkit.hookimpl
    def on_output(self, ctx: seamkit.HookContext, output: object) -> OutputFlow:
        if isinstance(output, Invoice) and abs(output.total - output.lines_total()) > 0.005:
            return Retry(
                f"total: {output.total} is not the sum of the lines, {output.lines_total()}"
            )
        return Continue()


async def main(model: str, mode: seamkit.OutputMode, text: str) -> int:
    agent = seamkit.Agent(
        model=model,
        preamble="You read invoices out of customers' messages.",
        output=seamkit.Output(Invoice, mode=mode),
        hooks=[TotalCheck()],
    )
    result = None
    async for event in agent.stream(text):
        if isinstance(event, S.OutputDelta):  # a JSON value: the fields so far
            print("partial", json.dumps(event.partial))
        elif isinstance(event, S.OutputRetry):  # drop this turn's partials
            print("retry", "; ".join(event.errors))
        elif isinstance(event, S.RunFinished):
            result = event.result
    assert result is not None
    if not isinstance(result.output, Invoice):  # failed: OutputInvalid, or stopped
        print(result.outcome)
        return 1
    invoice = result.output
    print(f"{invoice.customer} <{invoice.email}>: {invoice.total:.2f} {invoice.currency}")
    for line in invoice.lines:
        print(f"  {line.quantity} x {line.item} at {line.unit_price:.2f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Extract an invoice from text.")
    parser.add_argument("text", nargs="?", default=TEXT)
    parser.add_argument("--model", default=f"scripted:{HERE / 'script.yaml'}")
    parser.add_argument("--mode", default="auto", choices=["auto", "tool", "native", "prompted"])
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.model, args.mode, args.text)))
