"""Checking documents with the provider SDKs' own types, with short failure messages."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from tests.provider_strategies import materialized


def accepted(adapter: TypeAdapter[Any], value: Any) -> Any:
    """``value`` validated by an SDK type (lazy iterables run); AssertionError naming the
    first few refusals otherwise (a union's refusal lists every member: keep it short)."""
    try:
        return materialized(adapter.validate_python(value))
    except ValidationError as error:
        details = error.errors(include_url=False)
        shown = "; ".join(f"{'.'.join(map(str, d['loc']))}: {d['msg']}" for d in details[:4])
        raise AssertionError(f"the SDK refuses it ({len(details)} errors): {shown}") from None
