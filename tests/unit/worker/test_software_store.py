"""engine.worker.software_store: the software configs store resource types get in the
worker, on a SQLite file: documents as the API's, a resumed create finding what it made,
and the stack's tenant's rows only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine.context import RequestContext
from engine.db.session import Database
from engine.errors import InvalidRestrictedAction
from engine.services.software_configs import SoftwareConfigs
from engine.services.tenants import TenantService
from engine.worker.software_store import WorkerSoftwareConfigs
from tests.unit.conftest import Clock

CONFIG_ID = "0c6a4f1e-5d2b-4b8e-9f45-2a7c1d3e6b90"


def test_rows_read_back_as_the_apis_documents(db: Database, clock: Clock,
                                              ctx: RequestContext) -> None:
    store = WorkerSoftwareConfigs(db, clock, ctx.tenant_id)
    api = SoftwareConfigs(db, clock)

    made = store.create_config(config_id=CONFIG_ID, name="n", group="g", config="c",
                               inputs=[{"name": "i", "type": "String", "value": 1}],
                               outputs=[], options=None)
    again = store.create_config(config_id=CONFIG_ID, name="other", group="g", config="x",
                                inputs=[], outputs=[], options=None)
    assert made == again == store.get_config(CONFIG_ID) == api.show_config(ctx, CONFIG_ID)

    deployed = store.create_deployment("d-1", config_id=CONFIG_ID, server_id="srv",
                                       input_values={"i": 1}, action="CREATE",
                                       status="IN_PROGRESS", status_reason="r")
    assert store.create_deployment("d-1", config_id=CONFIG_ID, server_id="other",
                                   input_values=None, action="UPDATE", status="COMPLETE",
                                   status_reason="") == deployed
    updated = store.update_deployment("d-1", {"status": "COMPLETE"})
    assert updated == store.get_deployment("d-1") == api.show_deployment(ctx, "d-1")
    assert updated is not None and updated["status"] == "COMPLETE"
    assert store.update_deployment("nope", {"status": "FAILED"}) is None

    with pytest.raises(InvalidRestrictedAction):
        store.delete_config(CONFIG_ID)
    store.delete_deployment("d-1")
    store.delete_config(CONFIG_ID)
    store.delete_config(CONFIG_ID)  # gone already: nothing to do
    assert store.get_config(CONFIG_ID) is None and store.get_deployment("d-1") is None


def test_another_tenants_rows_read_as_none(db: Database, clock: Clock,
                                           ctx: RequestContext) -> None:
    WorkerSoftwareConfigs(db, clock, ctx.tenant_id).create_config(
        config_id=CONFIG_ID, name="n", group="g", config="c", inputs=[], outputs=[],
        options=None)
    other = TenantService(db, clock).create_tenant("other")
    theirs = WorkerSoftwareConfigs(db, clock, other.id)

    assert theirs.get_config(CONFIG_ID) is None
    theirs.delete_config(CONFIG_ID)
    assert WorkerSoftwareConfigs(db, clock, ctx.tenant_id).get_config(CONFIG_ID) is not None


def test_a_change_sees_the_deployment_it_writes(db: Database, clock: Clock,
                                                ctx: RequestContext) -> None:
    store = WorkerSoftwareConfigs(db, clock, ctx.tenant_id)
    store.create_config(config_id=CONFIG_ID, name="n", group="g", config="c", inputs=[],
                        outputs=[], options=None)
    store.create_deployment("d-1", config_id=CONFIG_ID, server_id="srv", input_values=None,
                            action="CREATE", status="COMPLETE", status_reason="by PUT")
    seen = []

    def only_in_progress(deployment: Mapping[str, Any]) -> Mapping[str, Any] | None:
        seen.append(deployment["status"])
        return None if deployment["status"] != "IN_PROGRESS" else {"status": "FAILED"}

    unchanged = store.change_deployment("d-1", only_in_progress)
    assert seen == ["COMPLETE"] and unchanged is not None
    assert unchanged["status_reason"] == "by PUT" and "updated_time" not in unchanged
    assert store.change_deployment("nope", only_in_progress) is None
