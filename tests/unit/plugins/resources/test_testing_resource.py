"""OS::Heat::TestResource: waits measured on the runtime clock, and the fail knob."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import StackValidationFailed
from engine.resources.base import MAX_WAIT_SECONDS, Resource, Token
from plugins.resources.testing_resource import TestResource
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def stored(token: Token) -> Any:
    """The token as the worker gets it back from the database."""
    return json.loads(json.dumps(token))


def test_defaults_match_heat(build: Build) -> None:
    res = build(TestResource)

    assert res.properties["value"] == "test_string"
    assert res.properties["fail"] is False
    assert res.properties["update_replace"] is False
    assert res.properties["wait_secs"] == 0
    assert res.properties["client_name"] == ""
    assert res.properties["entity_name"] == ""
    assert res.properties["attr_wait_secs"] == 0
    assert res.properties["constraint_prop_secs"] == 0
    assert res.properties["update_replace_value"] is None


def test_update_allowed_flags() -> None:
    flags = {k: p.update_allowed for k, p in TestResource.properties_schema.items()}

    assert flags.pop("update_replace_value") is False
    assert all(flags.values())


def test_schema_coerces_template_strings(build: Build) -> None:
    res = build(TestResource, {"fail": "true", "wait_secs": "2.5",
                               "action_wait_secs": '{"create": "3"}'})

    assert res.properties["fail"] is True
    assert res.properties["wait_secs"] == 2.5
    assert res.properties["action_wait_secs"] == {"create": 3, "update": None, "delete": None}


def test_schema_rejects_a_bad_wait(build: Build) -> None:
    with pytest.raises(StackValidationFailed,
                       match="wait_secs: Value 'soon' is not a number"):
        build(TestResource, {"wait_secs": "soon"})


def test_zero_wait_completes_on_first_poll(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"value": "hello"}, name="t")
    token = res.handle_create()

    assert res.check_create_complete(stored(token)) is True
    assert res.get_attribute("output") == "hello"
    assert res.physical_id is not None
    assert res.physical_id.startswith("teststack-t-")


def test_physical_id_is_recorded_before_the_wait_ends(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(TestResource, {"wait_secs": 10})
    token = res.handle_create()

    assert runtime.recorded == [res.physical_id]
    assert res.check_create_complete(stored(token)) is False


def test_create_waits_wait_secs_on_the_runtime_clock(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(TestResource, {"wait_secs": 10})
    token = stored(res.handle_create())

    runtime.advance(9.9)
    assert res.check_create_complete(token) is False
    runtime.advance(0.1)
    assert res.check_create_complete(token) is True


def test_wait_survives_a_new_instance(build: Build, runtime: FakeRuntime) -> None:
    first = build(TestResource, {"wait_secs": 5})
    token = stored(first.handle_create())

    runtime.advance(5)
    resumed = build(TestResource, {"wait_secs": 5},
                    physical_id=first.physical_id, data=dict(first.data))
    assert resumed.check_create_complete(token) is True
    assert resumed.get_attribute("output") == "test_string"


def test_minus_one_waits_forever(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"wait_secs": -1})
    token = stored(res.handle_create())

    runtime.advance(10 ** 9)
    assert res.check_create_complete(token) is False


@pytest.mark.parametrize("value", ["1e400", "nan", "-inf"])
def test_a_wait_no_number_can_hold_is_a_property_error(build: Build, value: str) -> None:
    with pytest.raises(StackValidationFailed, match="is not a finite number"):
        build(TestResource, {"wait_secs": value})


@pytest.mark.parametrize("raw", [
    {"wait_secs": 10 ** 12}, {"wait_secs": 1e300},
    {"wait_secs": 10 ** 400},
    {"action_wait_secs": {"create": 1e300}},
])
def test_a_wait_past_any_deadline_is_bounded_and_storable(
    build: Build, runtime: FakeRuntime, raw: dict[str, Any]
) -> None:
    # As Heat, the wait goes on until the operation times out; its deadline must still be
    # a number JSON (PostgreSQL's jsonb) and a datetime can hold.
    res = build(TestResource, raw)
    token = json.loads(json.dumps(res.handle_create(), allow_nan=False))

    assert runtime.clock < token["deadline"] <= runtime.clock + MAX_WAIT_SECONDS
    assert res.check_create_complete(token) is False


def test_a_huge_attr_wait_keeps_the_output_unknown(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"attr_wait_secs": 10 ** 400})
    assert res.check_create_complete(stored(res.handle_create())) is True

    runtime.advance(10 ** 9)
    assert res.get_attribute("output") is None


def test_action_wait_secs_overrides_wait_secs_per_action(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(TestResource, {"wait_secs": 100, "action_wait_secs": {"create": 2}})
    create = stored(res.handle_create())
    runtime.advance(2)
    assert res.check_create_complete(create) is True

    # No delete entry: the global wait applies.
    delete = stored(res.handle_delete())
    runtime.advance(99)
    assert res.check_delete_complete(delete) is False
    runtime.advance(1)
    assert res.check_delete_complete(delete) is True


def test_action_wait_secs_zero_overrides_a_nonzero_global(build: Build) -> None:
    res = build(TestResource, {"wait_secs": 100, "action_wait_secs": {"delete": 0}})
    assert res.check_delete_complete(stored(res.handle_delete())) is True


def test_fail_raises_heats_message_after_the_wait(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"fail": True, "wait_secs": 3}, name="broken")
    token = stored(res.handle_create())

    assert res.check_create_complete(token) is False
    runtime.advance(3)
    with pytest.raises(ValueError, match=r"^Test Resource failed broken$"):
        res.check_create_complete(token)


def test_failed_create_stores_no_output_and_no_physical_id(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(TestResource, {"fail": True, "value": "never"})
    res.handle_create()

    assert res.get_attribute("output") is None
    assert res.physical_id is None
    assert runtime.recorded == []


def test_delete_waits_but_never_fails(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"fail": True, "action_wait_secs": {"delete": 4}})
    token = stored(res.handle_delete())

    assert res.check_delete_complete(token) is False
    runtime.advance(4)
    assert res.check_delete_complete(token) is True


def test_delete_with_minus_one_waits_forever(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"wait_secs": -1})
    token = stored(res.handle_delete())

    runtime.advance(10 ** 9)
    assert res.check_delete_complete(token) is False


def _created(build: Build, raw: dict[str, Any]) -> Resource:
    res = build(TestResource, raw)
    assert res.check_create_complete(stored(res.handle_create())) is True
    return res


def test_output_is_null_until_attr_wait_secs_after_create(
    build: Build, runtime: FakeRuntime
) -> None:
    res = _created(build, {"value": "late", "attr_wait_secs": 30})

    assert res.get_attribute("output") is None
    runtime.advance(29)
    assert res.get_attribute("output") is None
    runtime.advance(1)
    assert res.get_attribute("output") == "late"


def test_attr_wait_counts_from_create_complete_not_start(
    build: Build, runtime: FakeRuntime
) -> None:
    res = build(TestResource, {"value": "v", "wait_secs": 50, "attr_wait_secs": 10})
    token = stored(res.handle_create())
    runtime.advance(50)
    assert res.check_create_complete(token) is True

    runtime.advance(9)
    assert res.get_attribute("output") is None
    runtime.advance(1)
    assert res.get_attribute("output") == "v"


def test_unknown_attribute_is_null(build: Build) -> None:
    assert _created(build, {}).get_attribute("nope") is None


def test_constraint_prop_secs_is_accepted(build: Build) -> None:
    res = build(TestResource, {"constraint_prop_secs": 60})
    res.validate()

    assert res.properties["constraint_prop_secs"] == 60


def test_description_is_the_first_docstring_paragraph() -> None:
    assert TestResource.describe() == (
        "A resource which stores the string value that was provided, for testing."
    )


def test_check_passes_when_a_physical_id_was_recorded(build: Build) -> None:
    res = _created(build, {})

    assert TestResource.check_supported is True
    assert res.check_check_complete(res.handle_check()) is True


def test_check_fails_when_the_create_recorded_nothing(build: Build) -> None:
    res = build(TestResource, {"fail": True})
    res.handle_create()

    with pytest.raises(Exception, match="^Resource not created$") as raised:
        res.handle_check()
    assert type(raised.value) is Exception  # reported as "Exception: ...", as in Heat


def test_a_value_change_replaces_only_with_update_replace(build: Build) -> None:
    assert build(TestResource, {"update_replace": True}).needs_replacement(
        {"value": "new"}) is True
    assert build(TestResource, {"update_replace": False}).needs_replacement(
        {"value": "new"}) is False


def test_other_changes_are_in_place_even_with_update_replace(build: Build) -> None:
    res = build(TestResource, {"update_replace": True, "fail": True})

    assert res.needs_replacement({"fail": True}) is False
    assert res.needs_replacement({"wait_secs": 3, "update_replace": True}) is False
    # update_replace_value is not update_allowed: its change always replaces.
    assert res.needs_replacement({"update_replace_value": "x"}) is True


def test_an_update_of_value_stores_it_and_waits(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"value": "two", "wait_secs": 100,
                               "action_wait_secs": {"update": 4}}, data={"value": "one"})
    token = stored(res.handle_update({"value": "two"}))

    assert res.get_attribute("output") == "two"
    assert res.check_update_complete(token) is False
    runtime.advance(4)
    assert res.check_update_complete(token) is True


def test_an_update_that_leaves_value_alone_does_not_wait(build: Build) -> None:
    res = build(TestResource, {"value": "one", "wait_secs": 100}, data={"value": "one"})

    assert res.check_update_complete(stored(res.handle_update({"wait_secs": 100}))) is True
    assert res.get_attribute("output") == "one"


def test_an_update_with_fail_fails_after_its_wait(build: Build, runtime: FakeRuntime) -> None:
    res = build(TestResource, {"value": "two", "fail": True, "wait_secs": 2},
                data={"value": "one"}, name="f")
    token = stored(res.handle_update({"value": "two", "fail": True}))

    assert res.get_attribute("output") == "one"  # a failing update stores nothing
    assert res.check_update_complete(token) is False
    runtime.advance(2)
    with pytest.raises(ValueError, match="^Test Resource failed f$"):
        res.check_update_complete(token)


def test_an_update_that_only_sets_fail_fails_at_once(build: Build) -> None:
    res = build(TestResource, {"fail": True, "wait_secs": 100}, name="f")

    with pytest.raises(ValueError, match="^Test Resource failed f$"):
        res.check_update_complete(stored(res.handle_update({"fail": True})))
