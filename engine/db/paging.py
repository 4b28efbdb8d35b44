"""Keyset paging, shared by the stack list and the events: the rows after a marker's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    and_,
    or_,
)


def keyset_after(keys: Sequence[Any], values: Sequence[Any], descending: bool) -> Any:
    """Rows strictly after ``values`` in the order of ``keys`` (all one direction):
    (k1 > v1) or (k1 = v1 and k2 > v2) or ... ; written out, not as a row value, so that
    it works the same on every backend."""
    alternatives = []
    for i, key in enumerate(keys):
        beyond = key < values[i] if descending else key > values[i]
        alternatives.append(and_(*(k == v for k, v in zip(keys[:i], values[:i],
                                                           strict=True)), beyond))
    return or_(*alternatives)
