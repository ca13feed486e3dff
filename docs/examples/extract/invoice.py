"""The record the extract example asks for: an invoice, with its lines and
its total, as a pydantic model (the manifests' ``output: {ref:
"invoice:Invoice"}``, and ``Agent(..., output=Invoice)`` in code)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Line(BaseModel):
    """One line of an invoice: what was bought, how many, at what price."""

    item: str
    quantity: int = Field(ge=1)
    unit_price: float = Field(ge=0, description="The price of one, in the invoice's currency.")


class Invoice(BaseModel):
    """An invoice read out of free text."""

    customer: str
    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+$")
    currency: str = Field(description="ISO 4217, e.g. EUR.")
    lines: list[Line]
    total: float

    def lines_total(self) -> float:
        """What the lines add up to (a business check: ``total`` should be it)."""
        return sum(line.quantity * line.unit_price for line in self.lines)
