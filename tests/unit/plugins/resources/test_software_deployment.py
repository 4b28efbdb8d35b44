"""OS::Heat::SoftwareDeployment and StructuredDeployment against a fake runtime: the derived
config and its deploy_* inputs per transport, the deployment's life, Heat's signal rules
and failure reason, the actions that trigger it, and its delete."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from engine.errors import (
    BadRequest,
    InvalidTemplateAttribute,
    SoftwareConfigNotFound,
    StackValidationFailed,
    UserParameterMissing,
)
from engine.resources.base import Resource
from plugins.resources.software_config import SoftwareComponent
from plugins.resources.software_deployment import (
    Error,
    SoftwareDeployment,
    StructuredDeployment,
)
from tests.unit.plugins.resources.conftest import Build, FakeRuntime

SOURCE = "0c6a4f1e-5d2b-4b8e-9f45-2a7c1d3e6b90"


@pytest.fixture
def source(runtime: FakeRuntime) -> str:
    runtime.configs.create_config(
        config_id=SOURCE, name="src", group="script", config="echo $foo",
        inputs=[{"name": "foo", "type": "String", "default": "dflt"},
                {"name": "bar", "type": "String"}],
        outputs=[{"name": "result", "type": "String", "error_output": False},
                 {"name": "oops", "type": "String", "error_output": True}],
        options={"opt": 1})
    return SOURCE


def deployment(build: Build, **raw: Any) -> Resource:
    return build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1", **raw},
                 name="deploy")


def signal(res: Resource, runtime: FakeRuntime, details: Mapping[str, Any] | None) -> str:
    """Deliver as the API does: the type's result joins the resource's signals."""
    accepted = res.handle_signal(details, list(runtime.own_signals))
    runtime.own_signals.append(json.loads(json.dumps(accepted.stored)))
    assert accepted.summary is not None
    return accepted.summary


def inputs_of(runtime: FakeRuntime, res: Resource) -> dict[str, Any]:
    found = runtime.configs.get_deployment(str(res.physical_id))
    assert found is not None
    derived = runtime.configs.get_config(found["config_id"])
    assert derived is not None
    return {item["name"]: item["value"] for item in derived["inputs"]}


def test_schema_and_defaults_match_heat() -> None:
    schema = {k: p.describe() for k, p in SoftwareDeployment.properties_schema.items()}

    assert list(schema) == ["config", "server", "input_values", "actions", "name",
                            "signal_transport"]
    assert schema["actions"]["default"] == ["CREATE", "UPDATE"]
    assert schema["signal_transport"]["default"] == "CFN_SIGNAL"
    assert [name for name, s in schema.items() if s["update_allowed"]] == [
        "config", "input_values", "actions", "name"]
    assert list(SoftwareDeployment.attributes_schema) == [
        "deploy_stdout", "deploy_stderr", "deploy_status_code"]
    assert set(StructuredDeployment.properties_schema) - set(schema) == {
        "input_key", "input_values_validate"}


def test_the_derived_config_carries_heats_inputs(build: Build, runtime: FakeRuntime,
                                                 source: str) -> None:
    res = deployment(build, input_values={"bar": "b", "extra": 3}, name="zz",
                     signal_transport="HEAT_SIGNAL")
    token = res.handle_create()

    found = runtime.configs.get_deployment(str(res.physical_id))
    assert found is not None and token == {"deployment": res.physical_id}
    assert (found["server_id"], found["action"], found["status"], found["status_reason"],
            found["input_values"]) == ("srv-1", "CREATE", "IN_PROGRESS",
                                       "Deploy data available", {"bar": "b", "extra": 3})
    derived = runtime.configs.get_config(found["config_id"])
    assert derived is not None
    assert (derived["name"], derived["group"], derived["config"], derived["options"]) == (
        "zz", "script", "echo $foo", {"opt": 1})
    assert derived["outputs"] == runtime.configs.configs[SOURCE]["outputs"]
    assert derived["inputs"][:3] == [
        {"name": "foo", "type": "String", "default": "dflt", "value": "dflt"},
        {"name": "bar", "type": "String", "value": "b"},
        {"name": "extra", "type": "String", "value": 3}]
    assert derived["inputs"][3] == {"name": "deploy_server_id", "type": "String",
                                    "description": "ID of the server being deployed to",
                                    "value": "srv-1"}
    issued = runtime.issued[0]
    assert {k: v for k, v in inputs_of(runtime, res).items() if k.startswith("deploy_")} == {
        "deploy_server_id": "srv-1", "deploy_action": "CREATE",
        "deploy_stack_id": f"teststack/{runtime.stack_id}",
        "deploy_resource_name": "deploy", "deploy_signal_transport": "HEAT_SIGNAL",
        "deploy_auth_url": f"http://kiln.test/v1/{runtime.tenant_id}",
        "deploy_username": issued.id, "deploy_user_id": issued.id,
        "deploy_password": issued.secret, "deploy_project_id": runtime.tenant_id,
        "deploy_region_name": None}


@pytest.mark.parametrize(("transport", "verb"), [("TEMP_URL_SIGNAL", "PUT"),
                                                 ("CFN_SIGNAL", "POST")])
def test_a_url_transport_gets_the_signed_url(build: Build, runtime: FakeRuntime, source: str,
                                             transport: str, verb: str) -> None:
    res = deployment(build, signal_transport=transport)
    res.handle_create()

    given = inputs_of(runtime, res)
    assert given["deploy_signal_id"] == runtime.issued[0].signed_url
    assert given["deploy_signal_verb"] == verb
    assert "deploy_password" not in given


def test_zaqar_is_refused(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="ZAQAR_SIGNAL is not supported by Kiln"):
        deployment(build, signal_transport="ZAQAR_SIGNAL").validate()


def test_no_signal_completes_at_once_without_a_token(build: Build, runtime: FakeRuntime,
                                                     source: str) -> None:
    res = deployment(build, signal_transport="NO_SIGNAL")

    assert res.handle_create() is None
    found = runtime.configs.get_deployment(str(res.physical_id))
    assert found is not None
    assert (found["status"], found["status_reason"]) == ("COMPLETE",
                                                         "Not waiting for outputs signal")
    assert runtime.issued == []


def test_a_signal_completes_it_with_its_outputs(build: Build, runtime: FakeRuntime,
                                                source: str) -> None:
    res = deployment(build)
    token = res.handle_create()
    assert res.check_create_complete(token) is False
    assert res.get_attribute("deploy_stdout") is None

    summary = signal(res, runtime, {"deploy_stdout": "done", "deploy_status_code": 0,
                                    "result": 42, "undeclared": "x"})
    assert summary == f"deployment {res.physical_id} succeeded"
    assert res.check_create_complete(token) is True

    found = runtime.configs.get_deployment(str(res.physical_id))
    assert found is not None
    assert (found["status"], found["status_reason"]) == ("COMPLETE", "Outputs received")
    assert found["output_values"] == {"result": 42, "deploy_stdout": "done",
                                      "deploy_stderr": None, "deploy_status_code": 0}
    assert res.get_attribute("result") == 42
    # Every output received too: a group reads its members' outputs from there.
    assert res.all_attributes() == {"deploy_stdout": "done", "deploy_stderr": None,
                                    "deploy_status_code": 0, "result": 42}
    assert res.get_attribute("oops") is None  # declared, no value
    with pytest.raises(InvalidTemplateAttribute):
        res.get_attribute("undeclared")


@pytest.mark.parametrize(("details", "summary", "reason"), [
    ({"deploy_status_code": 3, "deploy_stderr": "boom"}, "failed (3)",
     "deploy_status_code : Deployment exited with non-zero status code: 3"),
    ({"oops": "disk full"}, "failed", "oops : disk full"),
])
def test_a_failure_fails_it_with_heats_reason(build: Build, runtime: FakeRuntime,
                                             source: str, details: dict[str, Any],
                                             summary: str, reason: str) -> None:
    res = deployment(build)
    token = res.handle_create()

    assert signal(res, runtime, details) == f"deployment {res.physical_id} {summary}"
    with pytest.raises(Error) as caught:
        res.check_create_complete(token)
    assert str(caught.value) == f"Deployment to server failed: {reason}"
    assert res.get_attribute("deploy_stderr") == details.get("deploy_stderr")


def test_an_agents_update_of_the_deployment_completes_it(build: Build, runtime: FakeRuntime,
                                                         source: str) -> None:
    res = deployment(build)
    token = res.handle_create()

    runtime.configs.update_deployment(str(res.physical_id), {
        "status": "COMPLETE", "output_values": {"deploy_stdout": "via PUT"}})

    assert res.check_create_complete(token) is True
    assert res.get_attribute("deploy_stdout") == "via PUT"


def test_a_signal_before_the_deployment_exists_is_refused(build: Build) -> None:
    with pytest.raises(BadRequest, match="deployment_id must be specified"):
        deployment(build).handle_signal({}, [])


def test_an_action_not_in_actions_completes_without_waiting(build: Build,
                                                            runtime: FakeRuntime,
                                                            source: str) -> None:
    res = deployment(build, actions=["UPDATE"])

    assert res.handle_create() is None
    assert res.physical_id is None and runtime.configs.deployments == {}
    assert res.handle_suspend() is None


def test_an_update_derives_a_new_config_and_deletes_the_old(build: Build,
                                                            runtime: FakeRuntime,
                                                            source: str) -> None:
    first = deployment(build)
    token = first.handle_create()
    signal(first, runtime, {"deploy_status_code": 0})
    assert first.check_create_complete(token) is True
    old = runtime.configs.deployments[str(first.physical_id)]["config_id"]

    updated = build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1",
                                         "input_values": {"foo": "new"}},
                    name="deploy", physical_id=first.physical_id, data=dict(first.data))
    token = updated.handle_update({"input_values": {"foo": "new"}})

    found = runtime.configs.deployments[str(first.physical_id)]
    assert (found["action"], found["status"]) == ("UPDATE", "IN_PROGRESS")
    assert found["config_id"] != old and old not in runtime.configs.configs
    assert inputs_of(runtime, updated)["foo"] == "new"
    # The CREATE's signal is not the UPDATE's outcome.
    assert updated.check_update_complete(token) is False
    assert runtime.issued and len(runtime.issued) == 1  # one token for every action


def test_delete_removes_the_rows_unless_triggered_for_it(build: Build, runtime: FakeRuntime,
                                                         source: str) -> None:
    res = deployment(build)
    res.handle_create()

    token = res.handle_delete()
    assert token is None
    assert res.check_delete_complete(token) is True
    assert runtime.configs.deployments == {}
    assert set(runtime.configs.configs) == {SOURCE}
    assert runtime.revoked == 1


def test_a_delete_in_actions_waits_for_its_signal(build: Build, runtime: FakeRuntime,
                                                  source: str) -> None:
    assert SoftwareDeployment.no_signal_actions == ()
    res = deployment(build, actions=["CREATE", "DELETE"])
    res.handle_create()

    token = res.handle_delete()
    assert inputs_of(runtime, res)["deploy_action"] == "DELETE"
    assert res.check_delete_complete(token) is False
    signal(res, runtime, {"deploy_status_code": "0"})
    assert res.check_delete_complete(token) is True
    assert runtime.configs.deployments == {}


def test_a_missing_config_fails_the_create(build: Build) -> None:
    with pytest.raises(SoftwareConfigNotFound, match=f"Software config with id {SOURCE}"):
        deployment(build).handle_create()


def test_a_resumed_create_finds_its_deployment(build: Build, runtime: FakeRuntime,
                                               source: str) -> None:
    deployment(build).handle_create()
    again = deployment(build)
    again.handle_create()  # the first's data was never saved

    assert len(runtime.configs.deployments) == 1
    assert len(runtime.configs.configs) == 2  # the source and one derived config


def test_a_structured_deployment_substitutes_its_inputs(build: Build,
                                                        runtime: FakeRuntime) -> None:
    runtime.configs.create_config(
        config_id=SOURCE, name="s", group="Heat::Ungrouped",
        config={"a": {"get_input": "foo"}, "b": [{"get_input": "deploy_action"}],
                "c": {"get_input": "missing"}, "d": {"get_input": 1}},
        inputs=[{"name": "foo", "type": "String"}], outputs=[], options=None)
    res = build(StructuredDeployment, {"config": SOURCE, "server": "srv",
                                       "input_values": {"foo": "F"}}, name="deploy")
    res.handle_create()

    found = runtime.configs.deployments[str(res.physical_id)]
    assert runtime.configs.configs[found["config_id"]]["config"] == {
        "a": "F", "b": ["CREATE"], "c": None, "d": {"get_input": 1}}

    runtime.resource_key += "/d2"  # another resource: its own derived config ids
    strict = build(StructuredDeployment, {"config": SOURCE, "server": "srv2",
                                          "input_values_validate": "STRICT"}, name="d2")
    with pytest.raises(UserParameterMissing, match=r"The Parameter \(missing\)"):
        strict.handle_create()


def test_a_component_runs_for_its_own_actions(build: Build, runtime: FakeRuntime) -> None:
    component = build(SoftwareComponent, {"configs": [
        {"actions": ["CREATE"], "config": "setup", "tool": "script"},
        {"actions": ["DELETE"], "config": "teardown", "tool": "script"}]}, name="comp")
    component.handle_create()
    assert component.get_attribute("configs") == [
        {"actions": ["CREATE"], "config": "setup", "tool": "script"},
        {"actions": ["DELETE"], "config": "teardown", "tool": "script"}]
    stored = runtime.configs.get_config(str(component.physical_id))
    assert stored is not None and stored["group"] == "component"

    res = build(SoftwareDeployment, {"config": component.physical_id, "server": "srv",
                                     "actions": ["UPDATE"]}, name="deploy")
    assert res.handle_create() is not None  # CREATE: the component's, not ``actions``
    assert res.handle_update({}) is None


def test_a_component_refuses_two_configs_for_one_action(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="more than one configuration"):
        build(SoftwareComponent, {"configs": [
            {"actions": ["CREATE"], "tool": "a"},
            {"actions": ["CREATE", "UPDATE"], "tool": "b"}]}).validate()


def test_the_groups_as_heats() -> None:
    from plugins.resources.software_deployment_group import (
        SoftwareDeploymentGroup,
        SoftwareDeployments,
        StructuredDeploymentGroup,
    )

    assert list(SoftwareDeploymentGroup.properties_schema) == [
        "servers", "config", "input_values", "actions", "name", "signal_transport"]
    assert set(StructuredDeploymentGroup.properties_schema) - set(
        SoftwareDeploymentGroup.properties_schema) == {"input_key", "input_values_validate"}
    assert list(SoftwareDeploymentGroup.attributes_schema) == [
        "deploy_stdouts", "deploy_stderrs", "deploy_status_codes"]
    assert SoftwareDeploymentGroup.support().describe()["version"] == "5.0.0"
    policy = SoftwareDeploymentGroup.update_policy_schema
    assert {k: list(p.schema or {}) for k, p in policy.items()} == {
        "rolling_update": ["max_batch_size", "pause_time"],
        "batch_create": ["max_batch_size", "pause_time"]}
    assert SoftwareDeployments.support().describe() == {
        "status": "DEPRECATED", "version": "2014.2", "previous_status": None,
        "message": "Please use OS::Heat::SoftwareDeploymentGroup instead."}


def test_a_deployment_deleted_by_its_api_does_not_fail_the_delete(
        build: Build, runtime: FakeRuntime, source: str) -> None:
    res = deployment(build, actions=["CREATE", "DELETE"])
    res.handle_create()
    runtime.configs.deployments.clear()  # DELETE /software_deployments/<id>
    derived = set(runtime.configs.configs)

    token = res.handle_delete()

    assert token is None and res.check_delete_complete(token) is True
    assert set(runtime.configs.configs) == derived  # no derived config made for it


def test_no_secret_is_kept_in_the_resource_data(build: Build, runtime: FakeRuntime,
                                                 source: str) -> None:
    res = build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1",
                                     "signal_transport": "CFN_SIGNAL"}, name="deploy",
                data={"signal": {"id": "old", "secret": "old"}})  # as stacks of before
    token = res.handle_create()
    signal(res, runtime, {"deploy_status_code": 0})
    assert res.check_create_complete(token) is True
    updated = build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1",
                                         "signal_transport": "CFN_SIGNAL",
                                         "input_values": {"foo": "new"}},
                    name="deploy", physical_id=res.physical_id, data=dict(res.data))
    updated.handle_update({"input_values": {"foo": "new"}})

    (issued,) = runtime.issued  # one token for every action
    assert inputs_of(runtime, updated)["deploy_signal_id"] == issued.signed_url
    assert "secret" not in json.dumps(updated.data)
    assert updated.data["signal_token_id"] == issued.id


def test_signals_are_applied_once_each_and_in_one_change(build: Build,
                                                        runtime: FakeRuntime,
                                                        source: str) -> None:
    res = deployment(build)
    token = res.handle_create()
    signal(res, runtime, {"deploy_status_code": 0, "deploy_stdout": "first"})
    assert res.check_create_complete(token) is True
    assert res.data["last_signal"] == 1
    # An agent's PUT, then a late signal: the signal finds it not in progress.
    runtime.configs.update_deployment(str(res.physical_id), {"status": "IN_PROGRESS"})
    updated = build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1"},
                    name="deploy", physical_id=res.physical_id, data=dict(res.data))
    token = updated.handle_update({})
    assert updated.check_update_complete(token) is False  # the CREATE's is not re-read
    runtime.configs.update_deployment(str(res.physical_id), {
        "status": "COMPLETE", "output_values": {"deploy_stdout": "via PUT"}})
    assert signal(updated, runtime, {"deploy_stdout": "late"}) is not None
    assert updated.check_update_complete(token) is True
    assert updated.get_attribute("deploy_stdout") == "via PUT"
    assert updated.data["last_signal"] == 2


def test_a_signal_when_not_waiting_has_heats_generic_event(build: Build,
                                                           runtime: FakeRuntime,
                                                           source: str) -> None:
    res = deployment(build, input_values={"bar": "b"})
    token = res.handle_create()
    signal(res, runtime, {"deploy_status_code": 0})
    assert res.check_create_complete(token) is True

    assert res.handle_signal({"deploy_status_code": 0}, []).summary is None
    # An update without input values keeps the deployment's (Heat skips empty fields).
    updated = build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1"},
                    name="deploy", physical_id=res.physical_id, data=dict(res.data))
    updated.handle_update({"input_values": None})
    found = runtime.configs.deployments[str(res.physical_id)]
    assert found["input_values"] == {"bar": "b"}


def test_server_and_name_are_bounded_by_their_columns(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match=r"server.*length \(256\)"):
        deployment(build, server="s" * 256)
    with pytest.raises(StackValidationFailed, match=r"name.*length \(256\)"):
        deployment(build, name="n" * 256)


REPLACING = "3e9b7c20-1f4a-4d6e-8a52-6c0d9e1b7f33"


def test_a_changed_replace_on_change_input_replaces_it(build: Build, runtime: FakeRuntime,
                                                       source: str) -> None:
    """Heat's handle_update: the new config's replace_on_change inputs against the values
    the deployment's current derived config holds; the other changes are in place."""
    runtime.configs.create_config(
        config_id=REPLACING, name="r", group="script", config="",
        inputs=[{"name": "foo", "type": "String", "default": "dflt",
                 "replace_on_change": True},
                {"name": "fresh", "type": "String", "replace_on_change": True}],
        outputs=[], options=None)
    first = deployment(build, config=REPLACING, input_values={"foo": "a", "bar": 1})
    first.handle_create()

    def probe(**raw: Any) -> Resource:
        # As the worker decides: the new properties, neither physical id nor data.
        return deployment(build, config=REPLACING, **raw)

    changed = probe(input_values={"foo": "b", "bar": 1})
    assert changed.needs_replacement({"input_values": {"foo": "b", "bar": 1}}) is True
    # A flagged input given a value it had none of (null before), or back to its
    # default, differs; another input changed, or only the name, is in place.
    assert probe(input_values={"foo": "a", "fresh": "x"}).needs_replacement(
        {"input_values": {}}) is True
    assert probe().needs_replacement({"input_values": None}) is True
    assert probe(input_values={"foo": "a", "bar": 2}).needs_replacement(
        {"input_values": {}}) is False
    assert changed.needs_replacement({"name": "n"}) is False
    # The new config's flags count, not the old one's: foo is not flagged in SOURCE.
    assert deployment(build, input_values={"foo": "b"}).needs_replacement(
        {"config": SOURCE}) is False
    assert probe(input_values={"foo": "b"}, server="srv-2").needs_replacement(
        {"server": "srv-2"}) is True


def test_replace_on_change_without_a_store_or_a_deployment_is_in_place(
        build: Build, runtime: FakeRuntime, source: str) -> None:
    runtime.configs.create_config(
        config_id=REPLACING, name="r", group="script", config="",
        inputs=[{"name": "foo", "type": "String", "replace_on_change": True}],
        outputs=[], options=None)
    never = deployment(build, config=REPLACING, actions=["UPDATE"], input_values={"foo": 1})
    assert never.handle_create() is None and never.physical_id is None
    assert never.needs_replacement({"input_values": {"foo": 1}}) is False

    class Previewing(FakeRuntime):
        def software_configs(self) -> Any:
            raise RuntimeError("a resource tried to reach the software configs")

    previewed = SoftwareDeployment("deploy", dict(never.properties), Previewing())
    assert previewed.needs_replacement({"input_values": {"foo": 1}}) is False


def test_an_input_the_old_derived_config_lacks_never_replaces(
        build: Build, runtime: FakeRuntime, source: str) -> None:
    runtime.configs.create_config(
        config_id=REPLACING, name="r", group="script", config="",
        inputs=[{"name": "fresh", "type": "String", "replace_on_change": True}],
        outputs=[], options=None)
    deployment(build, input_values={"foo": "a"}).handle_create()  # on SOURCE: no "fresh"

    moved = deployment(build, config=REPLACING, input_values={"fresh": "x"})
    assert moved.needs_replacement({"config": REPLACING}) is False


def test_a_resumed_update_deletes_the_old_derived_config_once(
        build: Build, runtime: FakeRuntime, source: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = deployment(build)
    first.handle_create()
    old = runtime.configs.deployments[str(first.physical_id)]["config_id"]
    saved = dict(first.data)

    def update() -> Resource:
        res = build(SoftwareDeployment, {"config": SOURCE, "server": "srv-1",
                                         "input_values": {"foo": "new"}},
                    name="deploy", physical_id=first.physical_id, data=dict(saved))
        res.handle_update({"input_values": {"foo": "new"}})
        return res

    class Died(Exception):
        pass

    def dies(config_id: str) -> None:
        raise Died  # the worker died once the deployment named its new config

    with monkeypatch.context() as patched:
        patched.setattr(runtime.configs, "delete_config", dies)
        with pytest.raises(Died):
            update()
    new = runtime.configs.deployments[str(first.physical_id)]["config_id"]
    assert new != old and old in runtime.configs.configs

    resumed = update()  # its data as saved before the first attempt
    assert runtime.configs.deployments[str(first.physical_id)]["config_id"] == new
    assert set(runtime.configs.configs) == {SOURCE, new}
    assert inputs_of(runtime, resumed)["foo"] == "new"
