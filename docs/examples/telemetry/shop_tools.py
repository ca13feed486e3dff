"""The shop's tools. They are careless on purpose, the way real clients
are: one says the API key back, one puts it in its error, one returns a card
number. seamkit-otel masks all of it before export."""

from __future__ import annotations

import asyncio
import os

import seamkit


@seamkit.tool
def account_status(api_key: str) -> str:
    """The status of the shop's account."""
    return f"account for key {api_key}: active"


@seamkit.tool
async def lookup_order(order_id: str) -> str:
    """Where order ``order_id`` is."""
    await asyncio.sleep(0.01)
    return f"order {order_id}: shipped, paid with card-4111-1111-1111-1111"


@seamkit.tool
async def charge(order_id: str) -> str:
    """Charge order ``order_id`` to the customer's card."""
    await asyncio.sleep(0.01)
    key = os.environ.get("SHOP_API_KEY", "")
    raise PermissionError(f"the payment service refused key {key} for order {order_id}")
