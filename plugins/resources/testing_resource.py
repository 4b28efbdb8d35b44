"""``OS::Heat::TestResource``: a resource whose timing and failure a template controls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.base import Resource, Token, bounded_wait
from engine.schema import BOOLEAN, MAP, NUMBER, STRING, Attribute, Property
from engine.vocabulary import Action


class TestResource(Resource):
    """A resource which stores the string value that was provided, for testing.

    It waits ``wait_secs`` (or the per-action ``action_wait_secs``) on create, delete and
    an update that changes ``value``, ``-1`` meaning forever, and then fails a create or
    update with ``ValueError: Test Resource failed <name>`` when ``fail`` is true; a
    delete never fails. Changing ``value`` replaces it when ``update_replace`` is true. A
    check fails when the create recorded no physical id (a create with ``fail``).

    Divergences from Heat, both because Kiln never blocks a thread to simulate work:

    * ``attr_wait_secs`` does not sleep while resolving the attribute. Instead ``output``
      reads as null until that many seconds have passed since the create completed.
    * ``constraint_prop_secs`` is accepted but does not sleep during validation: sleeping
      in the API would let a tenant hold API threads at will.
    """

    # Tells pytest that this production class is not a test case.
    __test__: ClassVar[bool] = False
    support_version: ClassVar[str] = "5.0.0"
    #: Heat's TestResource has a check: it fails when no physical id was recorded.
    check_supported: ClassVar[bool] = True

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "value": Property(
            STRING, "The input string to be stored.",
            default="test_string", update_allowed=True,
        ),
        "update_replace": Property(
            BOOLEAN,
            "Value which can be set to trigger update replace for the particular resource.",
            default=False, update_allowed=True,
        ),
        "fail": Property(
            BOOLEAN,
            "Value which can be set to fail the resource operation to test failure "
            "scenarios.",
            default=False, update_allowed=True,
        ),
        "client_name": Property(
            STRING, "Client to poll.",
            default="", update_allowed=True,
        ),
        "entity_name": Property(
            STRING, "Client entity to poll.",
            default="", update_allowed=True,
        ),
        "wait_secs": Property(
            NUMBER, "Seconds to wait after an action (-1 is infinite).",
            default=0, update_allowed=True,
        ),
        "action_wait_secs": Property(
            MAP, "Options for simulating waiting.",
            update_allowed=True,
            schema={
                "create": Property(
                    NUMBER, "Seconds to wait after a create. Defaults to wait_secs.",
                    update_allowed=True,
                ),
                "update": Property(
                    NUMBER, "Seconds to wait after an update. Defaults to wait_secs.",
                    update_allowed=True,
                ),
                "delete": Property(
                    NUMBER, "Seconds to wait after a delete. Defaults to wait_secs.",
                    update_allowed=True,
                ),
            },
        ),
        "attr_wait_secs": Property(
            NUMBER, "Seconds after the create completes before the output is known.",
            default=0, update_allowed=True,
        ),
        "constraint_prop_secs": Property(
            NUMBER, "Accepted for compatibility; Kiln never sleeps during validation.",
            default=0, update_allowed=True,
        ),
        "update_replace_value": Property(
            STRING, "A value that can be stored but whose change forces replacement.",
        ),
    }

    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "output": Attribute("The string that was stored. This value is not cached."),
    }

    def handle_create(self) -> Token:
        # Heat records neither the value nor a physical id for a create that is going to
        # fail: output stays null and a stack check of it fails.
        if not self.properties["fail"]:
            self.data["value"] = self.properties["value"]
            # Recorded before any waiting so that a resumed create finds this resource; a
            # resumed create (physical id already set) keeps the one it has.
            if self.physical_id is None:
                self.set_physical_id(self.physical_resource_name())
        return self._wait_token(Action.CREATE)

    def check_create_complete(self, token: Token) -> bool:
        if not self._waited(token):
            return False
        if self.properties["fail"]:
            raise ValueError(f"Test Resource failed {self.name}")
        self.data["created_at"] = self.runtime.now()
        return True

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        # As Heat: a change of value replaces the resource when the new properties say
        # update_replace; any other change is in place unless update_replace_value moved.
        if "value" in prop_diff and self.properties["update_replace"]:
            return True
        return super().needs_replacement(prop_diff)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        # Heat simulates work only when value changed (to a non-empty string): then it
        # stores it (unless failing) and waits. Any update fails at the end when fail.
        if not prop_diff.get("value"):
            return {"deadline": self.runtime.now()}
        if not self.properties["fail"]:
            self.data["value"] = self.properties["value"]
        return self._wait_token(Action.UPDATE)

    def check_update_complete(self, token: Token) -> bool:
        if not self._waited(token):
            return False
        if self.properties["fail"]:
            raise ValueError(f"Test Resource failed {self.name}")
        return True

    def handle_delete(self) -> Token:
        return self._wait_token(Action.DELETE)

    def check_delete_complete(self, token: Token) -> bool:
        return self._waited(token)

    def handle_check(self) -> Token:
        if self.physical_id is None:
            raise Exception("Resource not created")  # Heat's words and exception type
        return None

    def get_attribute(self, name: str) -> Any:
        if name != "output":
            return None
        attr_wait = self.properties["attr_wait_secs"]
        if attr_wait > 0:
            created_at = self.data.get("created_at")
            if created_at is None or self.runtime.now() < created_at + bounded_wait(attr_wait):
                return None
        return self.data.get("value")

    def _wait_token(self, action: str) -> dict[str, float | None]:
        """The deadline of ``action`` as a token; ``None`` means wait forever."""
        per_action = self.properties["action_wait_secs"] or {}
        wait = per_action.get(action.lower())
        if wait is None:
            wait = self.properties["wait_secs"]
        # Heat treats every negative wait, not only -1, as infinite.
        if wait < 0:
            return {"deadline": None}
        return {"deadline": self.runtime.now() + bounded_wait(wait)}

    def next_check_in(self, token: Token) -> float | None:
        deadline = token.get("deadline") if isinstance(token, Mapping) else None
        return None if deadline is None else deadline - self.runtime.now()

    def _waited(self, token: Token) -> bool:
        deadline = token["deadline"]
        # ">=" rather than Heat's ">" so that a zero wait completes on the first poll
        # even under a clock that a test holds still.
        return deadline is not None and self.runtime.now() >= deadline
