"""engine.services.software_configs on a SQLite file: Heat's software config and deployment
APIs (documents, paging, refusals), each tenant's own."""

from __future__ import annotations

from typing import Any

import pytest

from engine.context import ADMIN_ROLE, MEMBER_ROLE, RequestContext
from engine.db.session import Database
from engine.errors import (
    BadRequest,
    Invalid,
    InvalidRestrictedAction,
    OperatorViewForbidden,
    RequestLimitExceeded,
    SoftwareConfigNotFound,
    SoftwareDeploymentNotFound,
    StackValidationFailed,
)
from engine.services import software_configs
from engine.services.software_configs import SoftwareConfigs
from engine.services.tenants import TenantService
from engine.worker.software_store import WorkerSoftwareConfigs
from tests.unit.conftest import Clock


def member(db: Database, clock: Clock, name: str) -> RequestContext:
    tenant = TenantService(db, clock).create_tenant(name)
    return RequestContext(tenant_id=tenant.id, token_tenant_id=tenant.id, role=MEMBER_ROLE)


@pytest.fixture
def service(db: Database, clock: Clock) -> SoftwareConfigs:
    return SoftwareConfigs(db, clock)


@pytest.fixture
def alice(db: Database, clock: Clock) -> RequestContext:
    return member(db, clock, "alice")


def config(service: SoftwareConfigs, ctx: RequestContext, **body: Any) -> dict[str, Any]:
    return service.create_config(ctx, {"name": "c", "group": "script", "config": "echo",
                                       **body})


def test_a_config_reads_back_in_heats_shape(service: SoftwareConfigs,
                                            alice: RequestContext) -> None:
    # An input's value is kept, as a derived config's are (the CLI's deployments').
    created = config(service, alice, options={"debug": True},
                     inputs=[{"name": "n", "type": "Number", "default": "5",
                              "replace_on_change": True}, {"name": "s", "value": "v"}],
                     outputs=[{"name": "o", "error_output": True}])

    assert created == service.show_config(alice, created["id"])
    assert created == {
        "id": created["id"], "name": "c", "group": "script",
        "creation_time": "2026-11-22T12:00:00Z", "config": "echo",
        "inputs": [{"name": "n", "type": "Number", "default": 5, "replace_on_change": True},
                   {"name": "s", "type": "String", "value": "v"}],
        "outputs": [{"name": "o", "type": "String", "error_output": True}],
        "options": {"debug": True}}
    # Heat's create with no inputs, outputs or options at all (Heat itself fails it).
    bare = service.create_config(alice, {"config": {"a": 1}})
    assert (bare["inputs"], bare["outputs"], bare["options"], bare["name"]) == (
        [], [], None, None)


@pytest.mark.parametrize(("body", "error", "message"), [
    ({"inputs": {"name": "x"}}, BadRequest, "Software Config I/O Schema must be in a list"),
    ({"outputs": ["x"]}, BadRequest, "Software Config I/O Schema must be a dict"),
    ({"inputs": [{"type": "String"}]}, StackValidationFailed,
     "Property error: inputs[0]: Property name not assigned"),
    ({"outputs": [{"name": "o", "type": "Integer"}]}, StackValidationFailed,
     "not an allowed value"),
    ({"inputs": [{"name": "n", "type": "Number", "default": "x"}]}, StackValidationFailed,
     "inputs[0].default"),
    ({"name": ["x"]}, BadRequest, "name must be a string"),
    ({"options": "x"}, BadRequest, "options must be a map"),
])
def test_a_bad_config_is_refused(service: SoftwareConfigs, alice: RequestContext,
                                 body: dict[str, Any], error: type[Exception],
                                 message: str) -> None:
    with pytest.raises(error) as caught:
        config(service, alice, **body)
    assert message in str(caught.value)


def test_configs_page_oldest_first_after_a_marker(service: SoftwareConfigs,
                                                  alice: RequestContext,
                                                  clock: Clock) -> None:
    ids = []
    for name in ("a", "b", "c"):
        ids.append(config(service, alice, name=name)["id"])
        clock.advance(1)

    listed = service.list_configs(alice)
    assert [c["id"] for c in listed] == ids
    assert listed[0] == {"id": ids[0], "name": "a", "group": "script",
                         "creation_time": "2026-11-22T12:00:00Z"}
    assert [c["id"] for c in service.list_configs(alice, limit=1, marker=ids[0])] == ids[1:2]
    # An unknown marker is ignored, as Heat's paging does.
    assert [c["id"] for c in service.list_configs(alice, marker="nope")] == ids


def test_tenants_never_see_each_others(service: SoftwareConfigs, alice: RequestContext,
                                       db: Database, clock: Clock) -> None:
    bob = member(db, clock, "bob")
    mine = config(service, alice)
    deployment = service.create_deployment(alice, {"config_id": mine["id"],
                                                   "server_id": "srv"})

    assert service.list_configs(bob) == [] and service.list_deployments(bob) == []
    assert service.metadata(bob, "srv") == []
    with pytest.raises(SoftwareConfigNotFound) as caught:
        service.show_config(bob, mine["id"])
    assert str(caught.value) == f"Software config with id {mine['id']} not found"
    with pytest.raises(SoftwareDeploymentNotFound) as missing:
        service.update_deployment(bob, deployment["id"], {"status": "COMPLETE"})
    assert str(missing.value) == f"Deployment with id {deployment['id']} not found"
    with pytest.raises(Invalid) as invalid:
        service.create_deployment(bob, {"config_id": mine["id"], "server_id": "srv"})
    assert str(invalid.value) == (f"Data supplied was not valid: Config with id "
                                  f"{mine['id']} not found")
    with pytest.raises(OperatorViewForbidden):
        service.list_configs(bob, global_tenant=True)
    admin = RequestContext(tenant_id=bob.tenant_id, token_tenant_id=bob.tenant_id,
                           role=ADMIN_ROLE)
    assert [(c["id"], c["project"]) for c in service.list_configs(admin, global_tenant=True)
            ] == [(mine["id"], alice.tenant_id)]


def test_a_deployment_lives_and_reports_as_heats(service: SoftwareConfigs,
                                                 alice: RequestContext, clock: Clock) -> None:
    used = config(service, alice, name="b-config")
    created = service.create_deployment(alice, {
        "config_id": used["id"], "server_id": "srv", "input_values": {"a": 1},
        "action": "UPDATE", "status": "IN_PROGRESS", "stack_user_project_id": "ignored"})
    assert created == {
        "id": created["id"], "server_id": "srv", "input_values": {"a": 1},
        "output_values": None, "action": "UPDATE", "status": "IN_PROGRESS",
        "status_reason": None, "config_id": used["id"],
        "creation_time": "2026-11-22T12:00:00Z"}

    clock.advance(5)
    # Heat skips what is empty: the status reason stays.
    updated = service.update_deployment(alice, created["id"], {
        "status": "COMPLETE", "output_values": {"deploy_stdout": "ok"},
        "status_reason": ""})
    assert updated == {**created, "status": "COMPLETE",
                       "output_values": {"deploy_stdout": "ok"},
                       "updated_time": "2026-11-22T12:00:05Z"}
    assert service.show_deployment(alice, created["id"]) == updated
    assert service.list_deployments(alice, "srv") == [updated]
    assert service.list_deployments(alice, "other") == []

    with pytest.raises(InvalidRestrictedAction) as refused:
        service.delete_config(alice, used["id"])
    assert str(refused.value) == (f"Software config with id {used['id']} can not be "
                                  "deleted as it is referenced.")
    service.delete_deployment(alice, created["id"])
    service.delete_config(alice, used["id"])
    with pytest.raises(SoftwareDeploymentNotFound):
        service.delete_deployment(alice, created["id"])
    with pytest.raises(SoftwareConfigNotFound):
        service.delete_config(alice, used["id"])


def test_metadata_is_the_servers_configs_by_name(service: SoftwareConfigs,
                                                 alice: RequestContext) -> None:
    zed, abe = config(service, alice, name="zed"), config(service, alice, name="abe")
    for used in (zed, abe):
        service.create_deployment(alice, {"config_id": used["id"], "server_id": "srv"})
    service.create_deployment(alice, {"config_id": zed["id"], "server_id": "other"})

    assert service.metadata(alice, "srv") == [service.show_config(alice, abe["id"]),
                                              service.show_config(alice, zed["id"])]


@pytest.mark.parametrize(("body", "message"), [
    ({"server_id": "srv"}, "config_id must be specified"),
    ({"config_id": "c"}, "server_id must be specified"),
    ({"config_id": "c", "server_id": "srv", "input_values": [1]},
     "input_values must be a map"),
    ({"config_id": "c", "server_id": "s" * 256}, "server_id is longer than 255"),
])
def test_a_bad_deployment_is_refused(service: SoftwareConfigs, alice: RequestContext,
                                     body: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        service.create_deployment(alice, body)


def test_a_tenant_goes_with_its_configs_and_deployments(service: SoftwareConfigs,
                                                         alice: RequestContext,
                                                         db: Database, clock: Clock) -> None:
    used = config(service, alice)
    service.create_deployment(alice, {"config_id": used["id"], "server_id": "srv"})

    TenantService(db, clock).delete_tenant("alice")

    assert service.list_configs(alice) == [] and service.list_deployments(alice) == []


def test_the_limits_count_every_row_and_spare_admins(
        service: SoftwareConfigs, alice: RequestContext, db: Database, clock: Clock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(software_configs, "MAX_CONFIGS_PER_TENANT", 1)
    monkeypatch.setattr(software_configs, "MAX_DEPLOYMENTS_PER_TENANT", 1)
    # A stack's config counts as the API's do (Heat's count_all).
    stack_config = WorkerSoftwareConfigs(db, clock, alice.tenant_id).create_config(
        name="s", group=None, config="", inputs=[], outputs=[], options=None)

    with pytest.raises(RequestLimitExceeded) as refused:
        config(service, alice)
    assert str(refused.value) == ("Request limit exceeded: You have reached the maximum "
                                  "software configs per tenant, 1. Please delete some "
                                  "configs.")
    service.create_deployment(alice, {"config_id": stack_config["id"], "server_id": "s"})
    with pytest.raises(RequestLimitExceeded, match="Please delete some deployments.$"):
        service.create_deployment(alice, {"config_id": stack_config["id"],
                                          "server_id": "s"})
    admin = RequestContext(tenant_id=alice.tenant_id, token_tenant_id=alice.tenant_id,
                           role=ADMIN_ROLE)
    made = config(service, admin)
    service.create_deployment(admin, {"config_id": made["id"], "server_id": "s"})
    assert len(service.list_configs(alice)) == 2


def test_a_config_deleted_twice_is_not_found_the_second_time(
        service: SoftwareConfigs, alice: RequestContext) -> None:
    made = config(service, alice)
    service.delete_config(alice, made["id"])
    with pytest.raises(SoftwareConfigNotFound):
        service.delete_config(alice, made["id"])
