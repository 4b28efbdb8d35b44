"""The runtime a resource instance gets from the worker (``engine.worker.step_runtime``),
on a SQLite file: its stable key, where a replaced resource's physical id goes, and
signal tokens issued (prefixed ``kilnsig_``) and revoked per generation."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from engine.context import RequestContext
from engine.db import resource_rows, signals, stack_rows
from engine.db.session import Database
from engine.resources.read_only import ReadOnlyRuntime
from engine.resources.registry import ResourceTypeRegistry
from engine.worker.step_runtime import SIGNAL_TOKEN_PREFIX, StepRuntime
from tests.unit.conftest import Clock
from tests.unit.worker.test_step_decision import REPLACED, Scene

API_URL = "http://kiln.test"


@pytest.fixture
def scene(db: Database, registry: ResourceTypeRegistry, clock: Clock,
          ctx: RequestContext) -> Scene:
    return Scene(db, registry, clock, ctx.tenant_id)


def runtime(scene: Scene, *, generation: int = 0, replaced: bool = False,
            placements: Any = None) -> StepRuntime:
    with scene.db.read() as session:
        stack = stack_rows.load_stack(session, scene.stack_id)
        row_id = resource_rows.get_stack_resource(session, scene.stack_id, "lamp").id
        return StepRuntime(scene.db, scene.clock, stack, row_id, "lamp", generation,
                           replaced, registry=scene.registry, api_url=API_URL,
                           placements=placements)


def stored(scene: Scene) -> Any:
    with scene.db.read() as session:
        row = resource_rows.get_stack_resource(session, scene.stack_id, "lamp")
        return row.physical_id, row.replaced


def test_each_generation_has_its_own_stable_key(scene: Scene) -> None:
    first = runtime(scene)
    assert first.resource_key.startswith(f"{scene.stack_id}/lamp/")
    assert first.resource_key.count("/") == 2  # as before replacements existed
    assert runtime(scene, generation=2).resource_key == f"{first.resource_key}/2"
    assert first.stack_name == "lamps" and first.now() == scene.clock().timestamp()


@pytest.mark.parametrize("generation", [0, 2])
def test_a_read_of_the_stored_row_has_the_workers_key(scene: Scene, generation: int) -> None:
    # The API's reads and the update forecast name the resource as the worker does: after
    # a replacement, an attribute built from physical_resource_name() must not differ.
    scene.stored(generation=generation)
    with scene.db.read() as session:
        stack = stack_rows.load_stack(session, scene.stack_id)
        row = resource_rows.get_stack_resource(session, scene.stack_id, "lamp")
        read = ReadOnlyRuntime(stack, row, scene.clock)

    assert read.resource_key == runtime(scene, generation=generation).resource_key


def test_only_a_replaced_resource_writes_its_physical_id_itself(scene: Scene) -> None:
    # The step's own write carries the resource's physical id, lease-guarded.
    runtime(scene).record_physical_id("lamp-7", {"k": 1})
    assert stored(scene) == ("lamp-1", None)

    scene.stored(replaced=REPLACED, physical_id="lamp-2", generation=1)
    runtime(scene, replaced=True).record_physical_id("lamp-0", {"k": 2})
    assert stored(scene) == ("lamp-2", {**REPLACED, "physical_id": "lamp-0",
                                        "data": {"k": 2}})


def lamp_token(scene: Scene, lamp: StepRuntime, secret: str) -> str | None:
    """The id of the token with ``secret`` if it may signal ``lamp``."""
    with scene.db.read() as session:
        return signals.find_signal_token(
            session, secret, tenant_id=lamp.tenant_id, stack_name="lamps",
            stack_id=scene.stack_id, resource_name="lamp")


def test_signal_tokens_are_stored_hashed_for_one_generation(scene: Scene) -> None:
    lamp = runtime(scene)
    issued = lamp.issue_signal_token()
    assert issued.url == (f"{API_URL}/v1/{lamp.tenant_id}/stacks/lamps/{scene.stack_id}"
                          "/resources/lamp/signal")

    def found(secret: str) -> str | None:
        return lamp_token(scene, lamp, secret)

    assert found(issued.secret) is not None
    assert found(issued.secret + "x") is None
    runtime(scene, generation=1).revoke_signal_tokens()  # another generation's
    assert found(issued.secret) is not None
    lamp.revoke_signal_tokens()
    assert found(issued.secret) is None


def test_a_signal_token_has_its_prefix_and_never_starts_with_a_dash(
        scene: Scene, monkeypatch: pytest.MonkeyPatch) -> None:
    # URL-safe base64 whose first byte is 0xf8-0xfb starts with "-": force one.
    monkeypatch.setattr(secrets, "token_bytes", lambda n=32: b"\xf8" * (n or 32))
    lamp = runtime(scene)
    issued = lamp.issue_signal_token()
    assert issued.secret.startswith(SIGNAL_TOKEN_PREFIX)
    assert issued.secret[len(SIGNAL_TOKEN_PREFIX)] == "-"  # what the prefix is protecting from
    assert not issued.secret.startswith("kiln_")  # told apart from a tenant token
    assert lamp_token(scene, lamp, issued.secret) == issued.id


def test_a_signal_token_issued_before_the_prefix_still_signals(scene: Scene) -> None:
    lamp = runtime(scene)
    old = "-" + secrets.token_urlsafe(32)
    with scene.db.transaction() as session:
        row_id = resource_rows.get_stack_resource(session, scene.stack_id, "lamp").id
        token_id = signals.add_signal_token(session, row_id, 0, old, scene.clock()).id
    assert lamp_token(scene, lamp, old) == token_id


def test_a_placement_is_asked_of_the_lifecycle_plugins_by_stack_and_name(
        scene: Scene) -> None:
    assert runtime(scene).placement() is None
    asked: list[tuple[str, str]] = []

    def placements(stack_id: str, name: str) -> dict[str, Any]:
        asked.append((stack_id, name))
        return {"zone": "a"}

    assert runtime(scene, placements=placements).placement() == {"zone": "a"}
    assert asked == [(scene.stack_id, "lamp")]
