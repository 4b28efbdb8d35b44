"""``OS::Heat::TestResource``: a resource whose timing and failure a template controls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.base import CREATE, DELETE, UPDATE, Resource, Token
from engine.schema import BOOLEAN, MAP, NUMBER, STRING, Attribute, Property


class TestResource(Resource):
    """A resource which stores the string value that was provided, for testing.

    It waits ``wait_secs`` (or the per-action ``action_wait_secs``) on create and delete,
    ``-1`` meaning forever, and then fails a create with ``ValueError: Test Resource failed
    <name>`` when ``fail`` is true; a delete never fails.

    Divergences from Heat, both because Kiln never blocks a thread to simulate work:

    * ``attr_wait_secs`` does not sleep while resolving the attribute. Instead ``output``
      reads as null until that many seconds have passed since the create completed.
    * ``constraint_prop_secs`` is accepted but does not sleep during validation: sleeping
      in the API would let a tenant hold API threads at will.
    """

    # Tells pytest that this production class is not a test case.
    __test__: ClassVar[bool] = False

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
        # Heat stores nothing for a create that is going to fail, so output stays null.
        if not self.properties["fail"]:
            self.data["value"] = self.properties["value"]
        # Recorded before any waiting so that a resumed create finds this resource; a
        # resumed create (physical id already set) keeps the one it has.
        if self.physical_id is None:
            self.set_physical_id(self.physical_resource_name())
        return self._wait_token(CREATE)

    def check_create_complete(self, token: Token) -> bool:
        if not self._waited(token):
            return False
        if self.properties["fail"]:
            raise ValueError(f"Test Resource failed {self.name}")
        self.data["created_at"] = self.runtime.now()
        return True

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        # Heat's TestResource replaces itself on any change while update_replace is set.
        return bool(self.properties["update_replace"]) or super().needs_replacement(prop_diff)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        if not self.properties["fail"]:
            self.data["value"] = self.properties["value"]
        return self._wait_token(UPDATE)

    def check_update_complete(self, token: Token) -> bool:
        if not self._waited(token):
            return False
        if self.properties["fail"]:
            raise ValueError(f"Test Resource failed {self.name}")
        return True

    def handle_delete(self) -> Token:
        return self._wait_token(DELETE)

    def check_delete_complete(self, token: Token) -> bool:
        return self._waited(token)

    def get_attribute(self, name: str) -> Any:
        if name != "output":
            return None
        attr_wait = self.properties["attr_wait_secs"]
        if attr_wait > 0:
            created_at = self.data.get("created_at")
            if created_at is None or self.runtime.now() < created_at + attr_wait:
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
        return {"deadline": self.runtime.now() + wait}

    def _waited(self, token: Token) -> bool:
        deadline = token["deadline"]
        # ">=" rather than Heat's ">" so that a zero wait completes on the first poll
        # even under a clock that a test holds still.
        return deadline is not None and self.runtime.now() >= deadline
