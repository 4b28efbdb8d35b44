"""How much Kiln's metrics moved during a test: prometheus_client's default registry is
process-wide (other tests, in any order, count in it too), so a test reads differences."""

from __future__ import annotations

from prometheus_client import REGISTRY

Key = tuple[str, tuple[tuple[str, str], ...]]


def _key(name: str, labels: dict[str, str]) -> Key:
    return name, tuple(sorted(labels.items()))


class Moved:
    """The registry's samples when made; called, how much one moved since:
    ``moved("kiln_steps_finished_total", resource_type="OS::Heat::None", outcome="COMPLETE")``."""

    def __init__(self) -> None:
        self._before = {_key(sample.name, sample.labels): sample.value
                        for metric in REGISTRY.collect() for sample in metric.samples}

    def __call__(self, name: str, **labels: str) -> float:
        now = REGISTRY.get_sample_value(name, labels) or 0.0
        return now - self._before.get(_key(name, labels), 0.0)
