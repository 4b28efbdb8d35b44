"""OS::Heat::None: a uuid4 physical id, any properties accepted, null attributes."""

from __future__ import annotations

import json
import uuid

from plugins.resources.none_resource import NoneResource
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def test_create_records_a_uuid4_physical_id_through_the_runtime(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(NoneResource)
    token = res.handle_create()

    assert runtime.recorded == [res.physical_id]
    assert uuid.UUID(runtime.recorded[0]).version == 4
    assert json.loads(json.dumps(token)) == token
    assert res.check_create_complete(token) is True
    assert res.get_reference_id() == res.physical_id


def test_each_create_gets_a_fresh_id(build: Build, runtime: FakeRuntime) -> None:
    build(NoneResource).handle_create()
    build(NoneResource).handle_create()

    assert len(set(runtime.recorded)) == 2


def test_unknown_properties_are_accepted_and_kept(build: Build) -> None:
    res = build(NoneResource, {"size": 3, "image": {"name": "cirros"}})

    assert res.properties == {"size": 3, "image": {"name": "cirros"}}


def test_every_attribute_is_null(build: Build) -> None:
    res = build(NoneResource, {"anything": 1})
    res.handle_create()

    assert res.get_attribute("anything") is None
    assert res.get_attribute("show") is None


def test_delete_completes_at_once(build: Build) -> None:
    res = build(NoneResource)
    assert res.check_delete_complete(res.handle_delete()) is True


def test_description_is_the_first_docstring_paragraph() -> None:
    assert NoneResource.describe() == (
        "Does nothing; accepts and ignores any properties. Used to stub types out."
    )


def test_a_property_change_never_replaces_it(build: Build) -> None:
    res = build(NoneResource, {"anything": 2})

    assert res.needs_replacement({"anything": 2}) is False
