"""OS::Heat::Delay: a wait measured on the runtime clock, its deadline kept in the data."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import StackValidationFailed
from engine.resources.base import MAX_WAIT_SECONDS, Token
from plugins.resources import delay as delay_module
from plugins.resources.delay import Delay
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def stored(token: Token) -> Any:
    return json.loads(json.dumps(token))


def test_defaults_match_heat(build: Build) -> None:
    res = build(Delay)

    assert res.properties == {"min_wait": 0, "max_jitter": 0, "jitter_multiplier": 1.0,
                              "actions": ["CREATE"]}


def test_schema_matches_heat() -> None:
    schema = {k: p.describe() for k, p in Delay.properties_schema.items()}

    assert all(p["update_allowed"] for p in schema.values())
    for name in ("min_wait", "max_jitter", "jitter_multiplier"):
        assert schema[name]["type"] == "number"
        assert schema[name]["constraints"] == [{"range": {"min": 0}}]
    assert schema["actions"]["constraints"] == [
        {"allowed_values": ["CREATE", "DELETE", "SUSPEND", "RESUME"]}]
    assert Delay.attributes_schema == {}
    assert Delay.support_version == "11.0.0"
    assert Delay.describe() == "A resource that pauses for a configurable delay."


@pytest.mark.parametrize("raw, message", [
    ({"min_wait": -1}, "out of range"),
    ({"max_jitter": -0.5}, "out of range"),
    ({"actions": ["UPDATE"]}, r'\["UPDATE"\] is not an allowed value'),
])
def test_bad_values_are_refused(build: Build, raw: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed, match=message):
        build(Delay, raw)


def test_create_waits_min_wait_on_the_runtime_clock(build: Build, runtime: FakeRuntime) -> None:
    res = build(Delay, {"min_wait": 10})
    token = stored(res.handle_create())

    assert res.check_create_complete(token) is False
    runtime.advance(9.9)
    assert res.check_create_complete(token) is False
    runtime.advance(0.1)
    assert res.check_create_complete(token) is True


def test_no_physical_id_and_the_name_is_the_reference(build: Build, runtime: FakeRuntime) -> None:
    res = build(Delay, {"min_wait": 1}, name="pause")
    res.handle_create()

    assert runtime.recorded == []
    assert res.physical_id is None
    assert res.get_reference_id() == "pause"


def test_the_deadline_is_in_the_data_and_a_new_instance_continues_it(
    build: Build, runtime: FakeRuntime
) -> None:
    first = build(Delay, {"min_wait": 30})
    token = stored(first.handle_create())
    assert first.data["delay"] == {"action": "CREATE", "deadline": runtime.clock + 30}

    runtime.advance(20)
    resumed = build(Delay, {"min_wait": 30}, data=stored(dict(first.data)))
    assert resumed.check_create_complete(token) is False
    runtime.advance(10)
    assert resumed.check_create_complete(token) is True
    # Done: nothing pending is left for the next action.
    assert "delay" not in resumed.data


def test_jitter_is_drawn_once_between_zero_and_max_times_multiplier(
    build: Build, runtime: FakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delay_module.random, "random", lambda: 0.5)
    res = build(Delay, {"min_wait": 2, "max_jitter": 4, "jitter_multiplier": 3})
    token = stored(res.handle_create())

    assert token["deadline"] == runtime.clock + 2 + 0.5 * 4 * 3
    runtime.advance(7.9)
    assert res.check_create_complete(token) is False
    runtime.advance(0.1)
    assert res.check_create_complete(token) is True


def test_jitter_stays_in_its_range(build: Build, runtime: FakeRuntime) -> None:
    waits = [build(Delay, {"min_wait": 1, "max_jitter": 2}).handle_create()["deadline"]
             - runtime.clock for _ in range(200)]

    assert all(1 <= w < 3 for w in waits)
    assert max(waits) - min(waits) > 0.5  # really random


def test_actions_not_listed_do_not_wait(build: Build, runtime: FakeRuntime) -> None:
    res = build(Delay, {"min_wait": 60, "actions": ["DELETE"]})

    assert res.check_create_complete(stored(res.handle_create())) is True
    assert res.check_suspend_complete(stored(res.handle_suspend())) is True
    token = stored(res.handle_delete())
    assert res.check_delete_complete(token) is False
    runtime.advance(60)
    assert res.check_delete_complete(token) is True


@pytest.mark.parametrize("action", ["CREATE", "DELETE", "SUSPEND", "RESUME"])
def test_each_listed_action_waits(build: Build, runtime: FakeRuntime, action: str) -> None:
    res = build(Delay, {"min_wait": 5, "actions": [action]})
    start = getattr(res, f"handle_{action.lower()}")
    check = getattr(res, f"check_{action.lower()}_complete")
    token = stored(start())

    assert check(token) is False
    runtime.advance(5)
    assert check(token) is True


def test_each_action_starts_a_fresh_wait(build: Build, runtime: FakeRuntime) -> None:
    res = build(Delay, {"min_wait": 5, "actions": ["SUSPEND", "RESUME"]})
    first = stored(res.handle_suspend())
    runtime.advance(5)
    assert res.check_suspend_complete(first) is True
    runtime.advance(100)

    again = stored(res.handle_suspend())
    assert res.check_suspend_complete(again) is False
    runtime.advance(5)
    assert res.check_suspend_complete(again) is True


def test_an_update_does_not_wait(build: Build) -> None:
    res = build(Delay, {"min_wait": 60, "actions": ["CREATE", "DELETE"]})

    assert res.needs_replacement({"min_wait": 1}) is False
    assert res.check_update_complete(res.handle_update({"min_wait": 1})) is True


@pytest.mark.parametrize("value", ["1e400", "nan", "-inf"])
def test_a_wait_no_number_can_hold_is_a_property_error(build: Build, value: str) -> None:
    with pytest.raises(StackValidationFailed, match="is not a finite number"):
        build(Delay, {"min_wait": value})


@pytest.mark.parametrize("raw", [
    {"min_wait": 10 ** 12}, {"min_wait": 1e300},
    {"min_wait": 10 ** 400},
    {"max_jitter": 1e300, "jitter_multiplier": 1e300},
    {"max_jitter": 10 ** 400, "jitter_multiplier": 10 ** 400},
])
def test_a_wait_past_any_deadline_is_bounded_and_storable(
    build: Build, runtime: FakeRuntime, raw: dict[str, Any]
) -> None:
    # As Heat, the wait goes on until the operation times out; its deadline must still be
    # a number JSON (PostgreSQL's jsonb) and a datetime can hold.
    res = build(Delay, raw)
    token = json.loads(json.dumps(res.handle_create(), allow_nan=False))

    assert runtime.clock < token["deadline"] <= runtime.clock + MAX_WAIT_SECONDS
    assert res.check_create_complete(token) is False
    assert 0 < res.next_check_in(token) <= MAX_WAIT_SECONDS  # type: ignore[operator]
