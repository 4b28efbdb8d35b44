"""``OS::Heat::None``: a placeholder that creates nothing."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.resources.base import Resource, Token


class NoneResource(Resource):
    """Does nothing; accepts and ignores any properties. Used to stub types out.

    Mapping a type to ``OS::Heat::None`` in an environment's ``resource_registry`` turns
    every resource of that type into this placeholder, so a template can be exercised
    without the backing service. Every attribute is null and an update never replaces it.
    """

    allow_unknown_properties: ClassVar[bool] = True
    allow_unknown_attributes: ClassVar[bool] = True
    support_version: ClassVar[str] = "5.0.0"

    def handle_create(self) -> Token:
        # Heat gives a placeholder a uuid4 so that get_resource still yields a unique,
        # id-shaped string for whatever consumed the stubbed-out type.
        if self.physical_id is None:
            self.set_physical_id(str(uuid.uuid4()))
        return None

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        return False  # nothing exists to replace: a property change is a no-op update

    def get_attribute(self, name: str) -> Any:
        return None
