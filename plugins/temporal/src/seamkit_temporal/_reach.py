"""Reaching a Temporal server from the command line: `reach` connects
(`seamkit_temporal.connect`) and checks the namespace, so that a server that
is not there, or a namespace it lacks, is one `seamkit.SeamkitError` saying
so, never the SDK's transport error."""

from __future__ import annotations

import re

import seamkit
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from ._worker import connect

__all__ = ["reach"]

_HINT = (
    "start the server (e.g. `temporal server start-dev`), or give --address HOST:PORT "
    "of its frontend"
)


async def reach(address: str, namespace: str) -> Client:
    """A client of the server at ``address`` whose ``namespace`` exists."""
    try:
        client = await connect(address, namespace)
    except (RuntimeError, ValueError) as exc:  # the SDK's "Failed client connect: ..."
        raise seamkit.SeamkitError(
            f"cannot reach Temporal at {address}: {_reason(exc)}", hint=_HINT
        ) from None
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise seamkit.SeamkitError(
                f"Temporal at {address} has no namespace {namespace!r}",
                hint=f"create it (`temporal operator namespace create --namespace {namespace}`)"
                " or give --namespace NAME of one it has",
            ) from None
        raise seamkit.SeamkitError(
            f"Temporal at {address} did not answer: {exc.message}", hint=_HINT
        ) from None
    return client


def _reason(exc: Exception) -> str:
    """The gist of a connection error: the operating system's words when the
    transport quotes them (``Connection refused``), else the error's text."""
    text = str(exc)
    quoted = re.search(r'message: "([^"]+)"', text)
    if quoted is not None:
        return quoted.group(1)
    return text.removeprefix("Failed client connect: ")
