"""Tools of the refund example: a lookup that only reads, and a refund that
moves money once (its idempotency key goes to the payment provider)."""

import seamkit


@seamkit.tool
def lookup(order: str) -> str:
    """Look an order up: what was paid, and whether it was refunded."""
    return f"order {order}: paid 250 EUR on 2026-11-02, not refunded"


@seamkit.tool
def refund(order: str, amount: int, call: seamkit.CallInfo) -> str:
    """Refund an amount (EUR) on an order."""
    # A real tool passes call.idempotency_key to the payment provider, so a
    # retry after a crash cannot pay twice.
    return f"refunded {amount} EUR on {order}"
