"""``Kiln::Test::Poison``: a resource that makes Kiln itself fail, as a Kiln bug would, so
the tests can show that such an operation still ends (the poison rule, issue 17).

Its handlers succeed; what they leave behind is what Kiln cannot store. A set is what
JSON cannot hold, like the internal marker a one-branch ``if`` once left in outputs:

* ``unstorable_in``: the actions (``create``, ``update``, ``delete``) after which its
  private data holds a set, so writing the step's result fails;
* attribute ``unstorable``: a set, so a stack output of it is that output's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.base import Resource, Token
from engine.schema import LIST, Attribute, Property


class Poison(Resource):
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "unstorable_in": Property(LIST, "Actions after which the data cannot be stored.",
                                  default=[], update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "unstorable": Attribute("A value no stack output can hold."),
    }

    def _leave(self, action: str) -> None:
        if action in self.properties["unstorable_in"]:
            self.data["left"] = {action}

    def handle_create(self) -> Token:
        self.set_physical_id(self.physical_resource_name())
        self._leave("create")
        return None

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        self._leave("update")
        return None

    def check_update_complete(self, token: Token) -> bool:
        return True

    def handle_delete(self) -> Token:
        self._leave("delete")
        return None

    def get_attribute(self, name: str) -> Any:
        return {"poison"} if name == "unstorable" else None
