"""Which installed distribution declares an entry point: what an operator asks of a
plugin ("where did this come from, which version").

stevedore's cached entry points carry no distribution, so the installed distributions are
scanned once per namespace asked about.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata


@dataclasses.dataclass(frozen=True)
class Origin:
    distribution: str  # "" when no installed distribution declares it
    version: str

    def __str__(self) -> str:
        return f"{self.distribution} {self.version}".strip()


def origins(namespace: str) -> dict[tuple[str, str], Origin]:
    """(entry point name, value) -> the distribution declaring it in ``namespace``."""
    found: dict[tuple[str, str], Origin] = {}
    for dist in importlib.metadata.distributions():
        for entry_point in dist.entry_points:
            if entry_point.group == namespace:
                found.setdefault((entry_point.name, entry_point.value),
                                 Origin(dist.metadata["Name"], dist.version))
    return found
