"""``Kiln::Test::Ledger``: a resource whose backend is a JSON-lines file, the ledger named
by ``KILN_TEST_LEDGER``, shared by every Kiln process of a test. A create appends one
line, unless the ledger already has the resource's stable name (a create resumed by
another worker adopts what its predecessor made, as the handler contract asks); a delete
appends another. Tests count the lines: a name created twice is a duplicate."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.base import Resource, Token
from engine.schema import NUMBER, Attribute, Property


def _ledger() -> str:
    return os.environ["KILN_TEST_LEDGER"]


def _record_once(entry: Mapping[str, Any]) -> None:
    """Append ``entry`` unless the ledger has a create of that name: the check and the
    write hold one lock, so two processes cannot both create."""
    with open(_ledger(), "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        if entry["op"] == "create":
            for line in handle:
                seen = json.loads(line)
                if seen["op"] == "create" and seen["name"] == entry["name"]:
                    return
        handle.write(json.dumps(dict(entry)) + "\n")


class Ledger(Resource):
    """A thing in the test ledger that takes ``wait_secs`` to create."""

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "wait_secs": Property(NUMBER, "Seconds a create takes after it is recorded.",
                              default=0, update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "name": Attribute("The name in the ledger."),
    }

    def handle_create(self) -> Token:
        name = self.physical_resource_name()
        if self.physical_id is None:
            _record_once({"op": "create", "name": name, "pid": os.getpid(),
                          "stack_id": self.runtime.stack_id, "resource": self.name})
            self.set_physical_id(name)
        return self.runtime.now() + float(self.properties["wait_secs"])

    def check_create_complete(self, token: Token) -> bool:
        return bool(self.runtime.now() >= token)

    def next_check_in(self, token: Token) -> float | None:
        return float(token) - self.runtime.now() if isinstance(token, float) else None

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        return None

    def check_update_complete(self, token: Token) -> bool:
        return True

    def handle_delete(self) -> Token:
        if self.physical_id is not None:
            _record_once({"op": "delete", "name": self.physical_id, "pid": os.getpid()})
        return None

    def check_delete_complete(self, token: Token) -> bool:
        return True

    def get_attribute(self, name: str) -> Any:
        return self.physical_id if name == "name" else None
