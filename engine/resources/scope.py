"""``InstanceScope``: the part of an evaluation scope that answers ``get_resource`` and
``get_attr`` from resource instances, for the scopes built over stored rows (the
worker's, for properties; the outputs', for a show). Each subclass says how it builds an
instance, or None for a resource never created, which Heat resolves to null."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.resources.base import Resource


class InstanceScope:
    def _instance(self, name: str) -> Resource | None:
        raise NotImplementedError

    def reference_id(self, resource: str) -> Any:
        instance = self._instance(resource)
        return instance.get_reference_id() if instance else None

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        instance = self._instance(resource)
        return instance.get_attribute_path(attribute, path) if instance else None

    def attributes(self, resource: str) -> Any:
        instance = self._instance(resource)
        return instance.all_attributes() if instance else None
