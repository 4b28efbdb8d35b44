"""Event sinks through python-heatclient on kiln-all (SQLite), with a webhook receiver on
loopback that checks each request's signature and drops repeats by the event id header
(tests/webhook_receiver.py): every event of a stack (its resources', the stack's, the
lifecycle plugins' calls) arrives, signed, in the order it was written; a receiver that
fails a few times gets the events again later; and across a kiln-all killed (SIGKILL)
while a receiver held a delivery unanswered, no event is lost and, after dropping the
repeat, each is counted once (specs/event-sinks.rst)."""

from __future__ import annotations

import pathlib
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.functional import servers
from tests.functional.conftest import heat_for, settled_events, unique, wait_for_status
from tests.webhook_receiver import Receiver, running

SECRET = "the-receivers-secret"
TEMPLATE = ("heat_template_version: 2018-08-31\nresources:\n"
            "  a: {type: OS::Heat::None}\n"
            "  b: {type: OS::Heat::None, depends_on: a}\n")


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    yield from running()


@pytest.fixture(scope="module")
def kiln(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    """A kiln-all of this module's own (a test kills it) that sends deliveries soon after
    they are written, times a receiver out after 1 s (a claim lasts 3 s) and retries
    within a fifth of a second; a killed worker's stack is taken over within 1.5 s."""
    running_kiln = servers.start_all(
        tmp_path_factory.mktemp("kiln-sinks"), None,
        OS_EVENT_SINKS__POLL_SECONDS="0.05", OS_EVENT_SINKS__TIMEOUT_SECONDS="1",
        OS_EVENT_SINKS__BACKOFF_SECONDS="0.1", OS_EVENT_SINKS__MAX_BACKOFF_SECONDS="0.2",
        OS_EVENT_SINKS__ALLOW_PRIVATE_TARGETS="true",  # the receiver is on loopback
        OS_ENGINE__LEASE_SECONDS="1.5", OS_ENGINE__HEARTBEAT_INTERVAL_SECONDS="0.25")
    yield running_kiln
    running_kiln.stop()


@pytest.fixture(scope="module")
def heat(kiln: servers.Kiln) -> Any:
    return heat_for(kiln, servers.new_tenant(kiln.env, unique("sinks")))


def create(heat: Any, receiver: Receiver, path: str) -> str:
    sink = {"type": "webhook", "target": f"{receiver.url}{path}", "secret": SECRET}
    created = heat.stacks.create(stack_name=unique("s"), template=TEMPLATE,
                                 environment={"event_sinks": [sink]})
    return str(created["stack"]["id"])


def arrived(heat: Any, receiver: Receiver, stack_id: str, path: str) -> list[Any]:
    """The stack's events once its create has ended (post-ops too), after waiting for the
    receiver to have had each at least once."""
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    events = settled_events(heat, stack_id, "CREATE")
    receiver.wait_for(lambda: {e.id for e in events} <= set(receiver.deduped(path)))
    return events


def test_every_event_arrives_signed_once_and_in_order(heat: Any, receiver: Receiver) -> None:
    stack_id = create(heat, receiver, "/all")

    events = arrived(heat, receiver, stack_id, "/all")

    got = receiver.on("/all")
    assert [r.event_id for r in got] == [e.id for e in events], "each once, in order"
    assert all(r.signed_with(SECRET) for r in got)
    bodies = [r.event for r in got]
    assert {b["payload"]["resource_type"] for b in bodies} == {
        "OS::Heat::Stack", "OS::Heat::None", "Kiln::LifecyclePlugin"}
    assert [(b["id"], b["payload"]["resource_name"], b["payload"]["stack_id"],
             f"{b['payload']['resource_action']}_{b['payload']['resource_status']}")
            for b in bodies] == [(e.id, e.resource_name, stack_id, e.resource_status)
                                 for e in events]
    assert all(b["type"] == "os.heat.event" and SECRET not in r.body.decode()
               for b, r in zip(bodies, got, strict=True))
    shown = heat.stacks.environment(stack_id)["event_sinks"]
    assert shown == [{"type": "webhook", "target": f"{receiver.url}/all",
                      "secret": "******"}]


def test_a_failing_receiver_gets_the_events_again_later(heat: Any, receiver: Receiver) -> None:
    receiver.fail_first("/flaky", 500, 502, 500)
    stack_id = create(heat, receiver, "/flaky")

    events = arrived(heat, receiver, stack_id, "/flaky")

    got = receiver.on("/flaky")
    first = events[0].id
    assert [r.headers["x-kiln-attempt"] for r in got if r.event_id == first] == [
        "1", "2", "3", "4"]
    assert len(got) == len(events) + 3, "only the failed tries are repeated"
    # The events after the failing one waited for it: still in their order.
    assert list(receiver.deduped("/flaky")) == [e.id for e in events]


def test_a_worker_killed_mid_delivery_loses_no_event(
        kiln: servers.Kiln, heat: Any, receiver: Receiver) -> None:
    release = receiver.stall_first("/stall")
    stack_id = create(heat, receiver, "/stall")
    assert receiver.stalled.wait(10), "the first delivery never came"
    [victim] = kiln.processes
    victim.popen.send_signal(signal.SIGKILL)
    victim.popen.wait(10)
    release.set()  # the receiver took the event; Kiln never heard it answered
    restarted = servers.Process([str(servers.BIN / "kiln-all")], kiln.env,
                                pathlib.Path(victim.log_path).with_name("restarted.log"))
    kiln.processes.append(restarted)
    servers.wait_until_serving(restarted, kiln.url + "/")

    events = arrived(heat, receiver, stack_id, "/stall")

    got = receiver.on("/stall")
    stalled = got[0].event_id
    assert stalled == events[0].id
    assert sorted(receiver.deduped("/stall")) == sorted(e.id for e in events)
    repeats = {r.event_id for r in got if r.event_id != stalled and
               sum(1 for o in got if o.event_id == r.event_id) > 1}
    assert [r.event_id for r in got].count(stalled) == 2, "sent again after the restart"
    assert repeats == set(), "only the unanswered delivery is repeated"
