"""What every AWS resource type shares: its client, its tags, and the create / delete /
adopt / check protocol that makes a resumed action find what it already made.

A subclass gives the backend calls (``create``, ``update``, ``delete``, ``observe`` and,
when the backend works asynchronously, ``created`` / ``deleted`` polls) and declares its
schemas; this class does the bookkeeping:

* ``handle_create`` first looks for the thing a killed worker may have made (``find``:
  by the stable name, the ``kiln:resource`` tag or a client token), then creates, and
  records the physical id before any waiting.
* Every thing that takes tags is tagged ``kiln:stack-id`` and ``kiln:resource`` (the
  resource's stable physical name) besides the template's ``Tags``.
* ``handle_delete`` makes no call without a physical id and treats "no such thing" as
  done; ``handle_adopt`` refuses an id whose thing does not exist; a poll that meets
  throttling looks again later.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from engine.errors import BackendResourceGone, BackendThrottled
from engine.resources.base import Resource, Token
from engine.schema import LIST, MAP, STRING, Property
from plugins.resources.aws.clients import Client

STACK_TAG, RESOURCE_TAG = "kiln:stack-id", "kiln:resource"
T = TypeVar("T")

TAGS = Property(
    LIST, "Tags (Key, Value) to put on the resource, besides Kiln's own kiln:stack-id and "
    "kiln:resource.", update_allowed=True,
    schema=Property(MAP, schema={
        "Key": Property(STRING, "The tag's key.", required=True),
        "Value": Property(STRING, "The tag's value.", required=True),
    }))


class AwsResource(Resource):
    """Base of the AWS types; see the module documentation."""

    #: boto3's name of the service (``"ec2"``, ``"s3"``).
    service: ClassVar[str] = ""
    check_supported: ClassVar[bool] = True

    # --- what a subclass provides ---------------------------------------------------------

    def find(self) -> str | None:
        """The physical id of what an earlier, interrupted create of this resource made;
        None when it made nothing."""
        return None

    def create(self) -> str:
        """Start making the thing; its physical id."""
        raise NotImplementedError

    def created(self) -> bool:
        """Whether the thing made by ``create`` is ready (asynchronous backends)."""
        return True

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        """Change the thing in place to :attr:`properties`."""

    def updated(self) -> bool:
        return True

    def delete(self, physical_id: str) -> None:
        raise NotImplementedError

    def deleted(self, physical_id: str) -> bool:
        """Whether the thing is gone (asynchronous backends); "no such thing" is gone."""
        return True

    # --- the protocol ---------------------------------------------------------------------

    def client(self, service: str | None = None) -> Client:
        clients = self.runtime.service("aws")
        client: Client = clients.client(service or self.service, self.runtime.tenant_id)
        return client

    def handle_create(self) -> Token:
        if self.physical_id is None:
            # Recorded before any waiting, so a worker that dies from here on leaves
            # the id behind; before it, ``find`` is what a resumed create relies on.
            self.set_physical_id(self.find() or self.create())
        return None

    def check_create_complete(self, token: Token) -> bool:
        return patiently(self.created)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        self.update(prop_diff)
        return None

    def check_update_complete(self, token: Token) -> bool:
        return patiently(self.updated)

    def handle_delete(self) -> Token:
        physical_id = self.physical_id
        if physical_id is None:
            # Heat's rule: what has no physical id was never made, and is deleted without
            # a call, so a stack whose create failed at an unreachable endpoint can still be
            # deleted. A create that died before recording its id is found again by its own
            # resumed step (``handle_create``'s ``find``), not here.
            return None
        try:
            self.delete(physical_id)
        except BackendResourceGone:
            return None
        return {"id": physical_id}

    def check_delete_complete(self, token: Token) -> bool:
        if not token:
            return True

        def gone() -> bool:
            try:
                return self.deleted(token["id"])
            except BackendResourceGone:
                return True

        return patiently(gone)

    def handle_adopt(self, resource_id: str | None, resource_data: Mapping[str, Any]) -> Token:
        if not resource_id:
            raise BackendResourceGone(service=self.service, operation="adopt",
                                      code="MissingId", reason="no physical id to adopt")
        # Looked at before anything is recorded: an id that names nothing is refused.
        self._physical_id = resource_id
        if self.observe() is None:
            self._physical_id = None
            raise BackendResourceGone(service=self.service, operation="adopt",
                                      code="NotFound",
                                      reason=f"{resource_id} does not exist")
        return super().handle_adopt(resource_id, resource_data)

    # --- helpers for subclasses ------------------------------------------------------------

    def kiln_tags(self) -> list[dict[str, str]]:
        return [{"Key": STACK_TAG, "Value": self.runtime.stack_id},
                {"Key": RESOURCE_TAG, "Value": self.physical_resource_name()}]

    def all_tags(self) -> list[dict[str, str]]:
        """The template's tags and Kiln's, as AWS's ``[{Key, Value}]``."""
        own = {tag["Key"] for tag in self.kiln_tags()}
        return [*self.kiln_tags(), *(t for t in self.template_tags() if t["Key"] not in own)]

    def template_tags(self) -> list[dict[str, str]]:
        return [dict(tag) for tag in self.properties.get("Tags") or []]

    def observed_tags(self, live: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
        """The live tags in the template's form: Kiln's left out (never the tenant's to
        set) and in the template's order, so only a real change reads as drift."""
        own = {STACK_TAG, RESOURCE_TAG}
        tags = [{"Key": t["Key"], "Value": t["Value"]} for t in live
                if t["Key"] not in own and not t["Key"].startswith("aws:")]
        return in_template_order(tags, self.template_tags(), key=lambda t: t["Key"])

    def retag(self, prop_diff: Mapping[str, Any],
              live: Callable[[], Sequence[Mapping[str, str]]], *,
              remove: Callable[[list[str]], Any],
              put: Callable[[list[dict[str, str]]], Any]) -> None:
        """For an update that changed ``Tags``: read the ``live`` tags, ``remove`` the keys
        the template dropped and ``put`` the template's (Kiln's own are never touched)."""
        if "Tags" not in prop_diff:
            return
        new = self.template_tags()
        removed = sorted({t["Key"] for t in live()} - {t["Key"] for t in new}
                         - {STACK_TAG, RESOURCE_TAG})
        if removed:
            remove(removed)
        if new:
            put(new)

    def stable_name(self, max_length: int, allowed: str = r"A-Za-z0-9-",
                    lower: bool = False) -> str:
        """:meth:`physical_resource_name` fitted to a backend's naming rules: only
        ``allowed`` characters, at most ``max_length``, keeping the unique suffix."""
        name = re.sub(f"[^{allowed}]", "-", self.physical_resource_name())
        name = name.lower() if lower else name
        if len(name) > max_length:
            suffix = name.rsplit("-", 1)[-1]
            name = f"{name[:max_length - len(suffix) - 1].rstrip('-')}-{suffix}"
        return name

    def zone(self) -> str | None:
        """The ``AvailabilityZone`` property, else the rack a placement lifecycle plugin
        put the resource on (its inventory's racks named after availability zones)."""
        given = self.properties.get("AvailabilityZone")
        if given:
            return str(given)
        placed = self.runtime.placement()
        return str(placed["rack"]) if placed and placed.get("rack") else None

    def present(self, read: Callable[[], Any]) -> Any:
        """``read()``, or None when the thing is gone."""
        try:
            return read()
        except BackendResourceGone:
            return None


def in_template_order(live: Iterable[T], wanted: Iterable[Any],
                      key: Callable[[Any], Any] = lambda item: item) -> list[T]:
    """The ``live`` items of a collection whose order means nothing to the backend: those
    the template lists first, in its order, then the others sorted by ``key``. A
    comparison with the template then finds only real differences."""
    left = {key(item): item for item in live}
    first = [left.pop(key(item)) for item in wanted if key(item) in left]
    return first + [left[k] for k in sorted(left)]


def patiently(poll: Callable[[], bool]) -> bool:
    """A poll that meets throttling (after botocore's own retries) answers "not yet":
    the worker looks again later instead of failing the resource."""
    try:
        return poll()
    except BackendThrottled:
        return False


def drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments without the properties the template left unset."""
    return {key: value for key, value in values.items() if value is not None}
