"""OS::Heat::WaitConditionHandle and OS::Heat::WaitCondition: Heat's signal shapes, counts,
failure and timeout reasons, against a fake runtime."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from engine.errors import BadRequest, ResourceActionNotSupported, StackValidationFailed
from engine.resources.base import Resource, SignalledResource, Token
from plugins.resources.value import Value
from plugins.resources.wait_condition import (
    WaitCondition,
    WaitConditionFailure,
    WaitConditionHandle,
    WaitConditionTimeout,
    merged_signals,
)
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def stored(token: Token) -> Any:
    return json.loads(json.dumps(token))


def signal(handle: Resource, details: Mapping[str, Any] | None,
           received: list[Mapping[str, Any]]) -> str | None:
    """Deliver as the API does: what the handle returns joins ``received``."""
    accepted = handle.handle_signal(details, received)
    received.append(json.loads(json.dumps(accepted.stored)))
    return accepted.summary


# --- the handle ---------------------------------------------------------------------------


def test_handle_schema_matches_heat() -> None:
    prop = WaitConditionHandle.properties_schema["signal_transport"].describe()

    assert prop["default"] == "TOKEN_SIGNAL"
    assert prop["constraints"] == [{"allowed_values": [
        "CFN_SIGNAL", "TEMP_URL_SIGNAL", "HEAT_SIGNAL", "NO_SIGNAL", "ZAQAR_SIGNAL",
        "TOKEN_SIGNAL"]}]
    assert list(WaitConditionHandle.attributes_schema) == ["token", "endpoint", "curl_cli",
                                                          "signal"]
    assert all(a.type == "string" for a in WaitConditionHandle.attributes_schema.values())
    assert WaitConditionHandle.support_version == "2014.2"
    assert WaitConditionHandle.describe() == "Resource for managing instance signals."


@pytest.mark.parametrize("transport", ["CFN_SIGNAL", "TEMP_URL_SIGNAL", "HEAT_SIGNAL",
                                       "NO_SIGNAL", "ZAQAR_SIGNAL"])
def test_only_token_signal_is_accepted(build: Build, transport: str) -> None:
    handle = build(WaitConditionHandle, {"signal_transport": transport})

    with pytest.raises(StackValidationFailed) as caught:
        handle.validate()
    assert caught.value.message == (
        f"Property error: signal_transport: {transport} is not supported by Kiln, which "
        "takes signals on its own API only: use TOKEN_SIGNAL")
    build(WaitConditionHandle).validate()


def test_create_issues_a_token_and_shows_heats_attributes(build: Build,
                                                          runtime: FakeRuntime) -> None:
    handle = build(WaitConditionHandle)
    assert {n: handle.get_attribute(n) for n in handle.attributes_schema} == dict.fromkeys(
        handle.attributes_schema)

    assert handle.handle_create() is None

    url = runtime.issued[0].url
    assert runtime.recorded == ["token-1"]
    assert runtime.recorded_data == {"token": "secret-1", "endpoint": url}
    assert handle.get_reference_id() == "token-1"
    assert handle.all_attributes() == {
        "token": "secret-1",
        "endpoint": url,
        "curl_cli": "curl -i -X POST -H 'X-Auth-Token: secret-1' -H 'Content-Type: "
                    f"application/json' -H 'Accept: application/json' {url}",
        "signal": "null",
    }


def test_a_resumed_create_keeps_its_token(build: Build, runtime: FakeRuntime) -> None:
    handle = build(WaitConditionHandle, physical_id="token-7",
                   data={"token": "secret-7", "endpoint": "http://x/signal"})

    handle.handle_create()

    assert runtime.issued == [] and runtime.recorded == []
    assert handle.get_attribute("token") == "secret-7"


def test_delete_revokes_the_tokens(build: Build, runtime: FakeRuntime) -> None:
    handle = build(WaitConditionHandle)

    assert handle.handle_delete() is None
    assert handle.check_delete_complete(None) is True
    assert runtime.revoked == 1


def test_adopt_keeps_the_id_with_a_new_token(build: Build, runtime: FakeRuntime) -> None:
    handle = build(WaitConditionHandle)

    handle.handle_adopt("old-id", {"token": "old-secret", "endpoint": "http://old/signal"})

    assert runtime.recorded == ["old-id"]
    assert handle.data == {"token": "secret-1", "endpoint": runtime.issued[0].url}


def test_a_signal_without_details_gets_heats_defaults(build: Build) -> None:
    handle = build(WaitConditionHandle)
    received: list[Mapping[str, Any]] = []

    assert signal(handle, None, received) == "status:SUCCESS reason:Signal 1 received"
    assert signal(handle, {}, received) == "status:SUCCESS reason:Signal 2 received"
    assert received == [
        {"id": "1", "status": "SUCCESS", "reason": "Signal 1 received", "data": None},
        {"id": "2", "status": "SUCCESS", "reason": "Signal 2 received", "data": None},
    ]


def test_a_full_signal_is_kept_and_its_id_is_a_string(build: Build) -> None:
    handle = build(WaitConditionHandle)
    received: list[Mapping[str, Any]] = []

    summary = signal(handle, {"status": "FAILURE", "reason": "disk full",
                              "data": {"free": 0}, "id": 42}, received)

    assert summary == "status:FAILURE reason:disk full"
    assert received == [{"id": "42", "status": "FAILURE", "reason": "disk full",
                         "data": {"free": 0}}]


def test_default_ids_count_distinct_ids(build: Build) -> None:
    handle = build(WaitConditionHandle)
    received: list[Mapping[str, Any]] = []
    signal(handle, {"id": "web"}, received)
    signal(handle, {"id": "web", "data": "again"}, received)

    signal(handle, {"data": "x"}, received)

    assert received[-1]["id"] == "2"
    assert received[-1]["reason"] == "Signal 2 received"


@pytest.mark.parametrize("details", [
    {"status": "SUCCESS", "extra": 1},
    {"status": "success"},
    {"status": "DONE"},
])
def test_a_malformed_signal_is_refused(build: Build, details: dict[str, Any]) -> None:
    handle = build(WaitConditionHandle)

    with pytest.raises(BadRequest, match="^Metadata format invalid"):
        handle.handle_signal(details, [])


def test_types_without_a_handler_refuse_signals(build: Build) -> None:
    with pytest.raises(ResourceActionNotSupported,
                       match="^signal is not supported for resource.$"):
        build(Value, {"value": 1}).handle_signal({}, [])


def test_merged_signals_replace_in_place() -> None:
    merged = merged_signals([
        {"id": "a", "status": "SUCCESS", "reason": "r1", "data": 1},
        {"id": "b", "status": "SUCCESS", "reason": "r2", "data": 2},
        {"id": "a", "status": "SUCCESS", "reason": "r3", "data": 3},
    ])

    assert list(merged) == ["a", "b"]
    assert merged["a"] == {"status": "SUCCESS", "reason": "r3", "data": 3}


# --- the wait condition -------------------------------------------------------------------


def test_wait_condition_schema_matches_heat() -> None:
    schema = {k: p.describe() for k, p in WaitCondition.properties_schema.items()}

    assert schema["handle"]["required"] and schema["handle"]["type"] == "string"
    assert schema["timeout"]["required"] and schema["timeout"]["type"] == "number"
    assert schema["timeout"]["constraints"] == [{"range": {"min": 1, "max": 43200}}]
    assert schema["count"]["default"] == 1 and schema["count"]["update_allowed"]
    assert schema["count"]["constraints"] == [{"range": {"min": 1}}]
    assert list(WaitCondition.attributes_schema) == ["data"]
    assert WaitCondition.support_version == "2014.2"


@pytest.mark.parametrize("raw, message", [
    ({"handle": "h", "timeout": 0}, "out of range"),
    ({"handle": "h", "timeout": 43201}, "out of range"),
    ({"handle": "h", "timeout": 10, "count": 0}, "out of range"),
    ({"handle": "h"}, "timeout"),
])
def test_bad_wait_condition_properties_are_refused(build: Build, raw: dict[str, Any],
                                                   message: str) -> None:
    with pytest.raises(StackValidationFailed, match=message):
        build(WaitCondition, raw)


class Signals:
    """The handle as the runtime finds it, with signals added as the API would."""

    def __init__(self, runtime: FakeRuntime, handle: Resource,
                 resource_type: type[Resource] = WaitConditionHandle) -> None:
        self._runtime = runtime
        self._handle = handle
        self._type = resource_type
        self.received: list[Mapping[str, Any]] = []
        self._publish()

    def send(self, details: Mapping[str, Any] | None = None) -> None:
        signal(self._handle, details, self.received)
        self._publish()

    def _publish(self) -> None:
        self._runtime.signalled["token-1"] = SignalledResource("handle", self._type,
                                                               tuple(self.received))


@pytest.fixture
def handle(build: Build, runtime: FakeRuntime) -> Signals:
    made = build(WaitConditionHandle, name="handle")
    made.handle_create()
    return Signals(runtime, made)


def waiting(build: Build, count: int = 1, timeout: float = 10) -> Resource:
    return build(WaitCondition, {"handle": "token-1", "timeout": timeout, "count": count},
                 name="wait")


def test_waits_for_count_success_signals(build: Build, handle: Signals) -> None:
    wait = waiting(build, count=2)
    token = stored(wait.handle_create())
    assert wait.get_attribute("data") == "{}"

    assert wait.check_create_complete(token) is False
    handle.send()
    assert wait.check_create_complete(token) is False
    handle.send({"data": {"ip": "10.0.0.5"}, "id": "web"})
    assert wait.check_create_complete(token) is True

    assert wait.get_attribute("data") == '{"1": null, "web": {"ip": "10.0.0.5"}}'
    assert wait.get_reference_id() == "wait"
    assert wait.physical_id is None


def test_a_signal_sent_twice_with_one_id_counts_once(build: Build, handle: Signals) -> None:
    wait = waiting(build, count=2)
    token = stored(wait.handle_create())

    handle.send({"id": "a", "data": 1})
    handle.send({"id": "a", "data": 2})

    assert wait.check_create_complete(token) is False
    assert wait.get_attribute("data") == '{"a": 2}'


def test_a_failure_signal_fails_with_heats_reason(build: Build, handle: Signals) -> None:
    wait = waiting(build, count=3)
    token = stored(wait.handle_create())
    handle.send()
    handle.send({"status": "FAILURE", "reason": "no disk"})
    handle.send({"status": "FAILURE", "reason": "no network"})

    with pytest.raises(WaitConditionFailure) as caught:
        wait.check_create_complete(token)
    assert str(caught.value) == "no disk;no network"
    assert json.loads(wait.get_attribute("data")) == {"1": None, "2": None, "3": None}


def test_timeout_names_what_arrived(build: Build, handle: Signals,
                                    runtime: FakeRuntime) -> None:
    wait = waiting(build, count=2, timeout=5)
    token = stored(wait.handle_create())
    runtime.advance(5)
    assert wait.check_create_complete(token) is False  # Heat's test is "older than"

    runtime.advance(0.5)
    with pytest.raises(WaitConditionTimeout, match="^0 of 2 received$"):
        wait.check_create_complete(token)
    handle.send({"reason": "booted"})
    with pytest.raises(WaitConditionTimeout) as caught:
        wait.check_create_complete(token)
    assert str(caught.value) == "1 of 2 received - booted"


def test_enough_signals_win_over_a_late_poll(build: Build, handle: Signals,
                                             runtime: FakeRuntime) -> None:
    wait = waiting(build, timeout=5)
    token = stored(wait.handle_create())
    handle.send()
    runtime.advance(60)

    assert wait.check_create_complete(token) is True


def test_a_new_instance_continues_from_the_token(build: Build, handle: Signals,
                                                 runtime: FakeRuntime) -> None:
    token = stored(waiting(build, timeout=5).handle_create())
    runtime.advance(3)

    again = waiting(build, timeout=5)
    assert again.check_create_complete(token) is False
    runtime.advance(3)
    with pytest.raises(WaitConditionTimeout):
        again.check_create_complete(token)


@pytest.mark.parametrize("found", [None, "Value"])
def test_the_handle_must_be_a_wait_condition_handle(build: Build, runtime: FakeRuntime,
                                                    found: str | None) -> None:
    if found:
        runtime.signalled["token-1"] = SignalledResource("v", Value, ())
    wait = waiting(build)

    with pytest.raises(ValueError) as caught:
        wait.handle_create()
    assert str(caught.value) == (
        f"{'v' if found else 'token-1'} is not a valid wait condition handle.")


def test_an_update_waits_again_for_the_new_count(build: Build, handle: Signals,
                                                 runtime: FakeRuntime) -> None:
    handle.send()
    wait = build(WaitCondition, {"handle": "token-1", "timeout": 5, "count": 2}, name="wait")
    assert wait.needs_replacement({"count": 2}) is False
    assert wait.needs_replacement({"timeout": 9}) is True
    runtime.advance(100)

    token = stored(wait.handle_update({"count": 2}))

    assert wait.check_update_complete(token) is False
    handle.send()
    assert wait.check_update_complete(token) is True
