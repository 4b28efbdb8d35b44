"""Which resources a rule's ``resources`` selector picks, and what a resource's tags and
metadata flags are. Shared by every rule on planned changes, in the policy and the
approval plugins alike.

Heat resources have no tags of their own, so a resource's tags are read from its
properties, as the two families of resource types write them:

* ``tags``: a list of strings (OpenStack: servers, networks, ports, ...). Each string is
  one tag, matched whole: ``env=prod`` is one tag, not a key and a value.
* ``Tags``: a list of ``{Key: ..., Value: ...}`` maps (AWS). Each gives two tags, its
  key and ``<key>=<value>``, so a selector may ask for a key whatever its value
  (``protected``) or for one value (``env=prod``).

Anything else in those properties (a value known only at run time, a masked hidden
value, an entry of another shape) gives no tag. A metadata flag is a key of the
resource's template ``metadata`` whose value is true (YAML ``true``, or the string
``"true"`` in any case).

Tags and metadata are the template's, that is the tenant's: a rule on them protects what
the tenant marks. A rule that must hold whatever the tenant writes selects by type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from engine.lifecycle.view import ResourceView

SELECTOR_KEYS = ("types", "names", "tags", "metadata")


@dataclasses.dataclass(frozen=True)
class Selector:
    """Resources whose type matches one of ``types``, whose name matches one of
    ``names``, that carry a tag matching one of ``tags`` and a flag among ``metadata``:
    every key given must hold; a key not given (empty) holds for every resource."""

    types: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: tuple[str, ...] = ()

    def __str__(self) -> str:
        """The resources picked, for a message: ``resources of type OS::Trove::* tagged
        protected``."""
        text = "resources"
        for label, patterns in (("of type", self.types), ("named", self.names),
                                ("tagged", self.tags), ("with metadata flag", self.metadata)):
            if patterns:
                text += f" {label} {' or '.join(patterns)}"
        return text


EVERY_RESOURCE = Selector()


def selects(selector: Selector, name: str, sides: Iterable[ResourceView]) -> bool:
    """Whether ``selector`` picks the resource ``name`` as one of ``sides`` shows it (the
    stored resource and the resource as the operation leaves it, either of which may be
    missing). Picked if one side satisfies every key: so a resource tagged ``protected``
    is still protected in the very update that removes the tag and replaces it."""
    if selector.names and not any(fnmatchcase(name, p) for p in selector.names):
        return False
    if not (selector.types or selector.tags or selector.metadata):
        return True
    return any(_selects_side(selector, side) for side in sides)


def _selects_side(selector: Selector, resource: ResourceView) -> bool:
    if selector.types and not any(fnmatchcase(resource.type, p) for p in selector.types):
        return False
    if selector.tags:
        tags = resource_tags(resource)
        if not any(fnmatchcase(tag, p) for p in selector.tags for tag in tags):
            return False
    if selector.metadata:
        flags = metadata_flags(resource)
        if not any(key in flags for key in selector.metadata):
            return False
    return True


def resource_tags(resource: ResourceView) -> tuple[str, ...]:
    """The resource's tags, read from its ``tags`` and ``Tags`` properties (see the module
    documentation)."""
    tags: list[str] = []
    for item in _sequence(resource.properties.get("tags")):
        if isinstance(item, str):
            tags.append(item)
    for item in _sequence(resource.properties.get("Tags")):
        if isinstance(item, Mapping) and isinstance(item.get("Key"), str):
            key, value = item["Key"], item.get("Value")
            tags.append(key)
            if isinstance(value, str):
                tags.append(f"{key}={value}")
    return tuple(tags)


def metadata_flags(resource: ResourceView) -> frozenset[str]:
    """The keys of the resource's ``metadata`` set to true."""
    return frozenset(key for key, value in resource.metadata.items()
                     if isinstance(key, str) and _true(value))


def _sequence(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")
