"""OS::Heat::WaitConditionHandle and OS::Heat::WaitCondition through the real
python-heatclient against kiln-all: the handle's signal URL and token, signals sent with
nothing but that token, and the wait's success, failure and timeout as Heat reports them."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  count: {type: number, default: 2}
  timeout: {type: number, default: 120}
resources:
  handle:
    type: OS::Heat::WaitConditionHandle
  wait:
    type: OS::Heat::WaitCondition
    properties:
      handle: {get_resource: handle}
      count: {get_param: count}
      timeout: {get_param: timeout}
outputs:
  data: {value: {get_attr: [wait, data]}}
  curl: {value: {get_attr: [handle, curl_cli]}}
"""


@pytest.fixture(scope="module")
def tenant(kiln_all: servers.Kiln) -> servers.Credentials:
    return servers.new_tenant(kiln_all.env, unique("wait-"))


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln, tenant: servers.Credentials) -> Any:
    return heat_for(kiln_all, tenant)


def create(heat: Any, **parameters: Any) -> str:
    stack_id: str = heat.stacks.create(stack_name=unique("w"), template=TEMPLATE,
                                       parameters=parameters)["stack"]["id"]
    return stack_id


def handle_attributes(heat: Any, stack_id: str) -> dict[str, Any]:
    """The handle's attributes, once it exists (the wait is then in progress)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        wait_for_status(heat, stack_id, "CREATE_IN_PROGRESS")
        try:
            handle = heat.resources.get(stack_id, "handle",
                                        with_attr=["curl_cli", "endpoint", "token", "signal"])
        except heat_exc.HTTPNotFound:  # not planned yet: no resource rows
            handle = None
        if handle is not None and handle.resource_status == "CREATE_COMPLETE":
            return dict(handle.attributes)
        time.sleep(0.1)
    raise AssertionError("the handle was never created")


def send(endpoint: str, token: str, body: Any = None) -> requests.Response:
    """A signal as a server's script sends it: plain HTTP, the signal token only."""
    return requests.post(endpoint, data=None if body is None else json.dumps(body),
                         headers={"X-Auth-Token": token, "Content-Type": "application/json",
                                  "Accept": "application/json"}, timeout=10)


def output(heat: Any, stack_id: str, key: str) -> Any:
    return heat.stacks.output_show(stack_id, key)["output"]["output_value"]


def test_two_signals_with_the_handle_token_complete_the_stack(
        kiln_all: servers.Kiln, tenant: servers.Credentials, heat: Any) -> None:
    stack_id = create(heat)
    stack_name = heat.stacks.get(stack_id).stack_name
    found = handle_attributes(heat, stack_id)
    endpoint, token = found["endpoint"], found["token"]
    assert endpoint == (f"{kiln_all.endpoint(tenant.tenant_id)}/stacks/{stack_name}/"
                        f"{stack_id}/resources/handle/signal")
    assert found["curl_cli"] == (
        f"curl -i -X POST -H 'X-Auth-Token: {token}' -H 'Content-Type: application/json' "
        f"-H 'Accept: application/json' {endpoint}")
    assert found["signal"] == "null"  # as Heat 27 for TOKEN_SIGNAL
    assert token != tenant.token

    first = send(endpoint, token)
    assert first.status_code == 200 and first.json() is None
    assert heat.stacks.get(stack_id).stack_status == "CREATE_IN_PROGRESS"
    assert send(endpoint, token, {"status": "SUCCESS", "reason": "web is up",
                                  "data": {"ip": "10.0.0.5"}, "id": "web"}).status_code == 200

    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    assert json.loads(output(heat, stack_id, "data")) == {"1": None,
                                                          "web": {"ip": "10.0.0.5"}}
    assert output(heat, stack_id, "curl") == found["curl_cli"]
    signals = [(e.resource_status, e.resource_status_reason)
               for e in heat.events.list(stack_id, resource_name="handle", sort_dir="asc")
               if e.resource_status.startswith("SIGNAL")]
    assert signals == [
        ("SIGNAL_COMPLETE", "Signal: status:SUCCESS reason:Signal 1 received"),
        ("SIGNAL_COMPLETE", "Signal: status:SUCCESS reason:web is up"),
    ]


def test_a_failure_signal_fails_the_stack_with_heats_reason(heat: Any) -> None:
    stack_id = create(heat)
    found = handle_attributes(heat, stack_id)

    response = send(found["endpoint"], found["token"],
                    {"status": "FAILURE", "reason": "package install failed"})
    assert response.status_code == 200

    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert stack.stack_status_reason == ("Resource CREATE failed: WaitConditionFailure: "
                                         "resources.wait: package install failed")
    wait = heat.resources.get(stack_id, "wait")
    assert wait.resource_status_reason == ("WaitConditionFailure: resources.wait: "
                                           "package install failed")


def test_the_wait_times_out_with_heats_reason(heat: Any) -> None:
    stack_id = create(heat, count=2, timeout=2)
    found = handle_attributes(heat, stack_id)
    assert send(found["endpoint"], found["token"], {"reason": "one of two"}).status_code == 200

    stack = wait_for_status(heat, stack_id, "CREATE_FAILED")
    assert stack.stack_status_reason == ("Resource CREATE failed: WaitConditionTimeout: "
                                         "resources.wait: 1 of 2 received - one of two")


def test_only_the_handles_own_token_is_accepted(
        kiln_all: servers.Kiln, tenant: servers.Credentials, heat: Any) -> None:
    stack_id = create(heat, count=1)
    found = handle_attributes(heat, stack_id)
    endpoint, token = found["endpoint"], found["token"]
    stack_url = endpoint.rsplit("/resources/", 1)[0]

    for response in (
        send(endpoint, "not-the-token"),
        send(endpoint, ""),
        send(endpoint.replace("/handle/", "/wait/"), token),
        requests.get(stack_url, headers={"X-Auth-Token": token}, timeout=10),
        requests.get(f"{kiln_all.endpoint(tenant.tenant_id)}/stacks",
                     headers={"X-Auth-Token": token}, timeout=10),
    ):
        assert response.status_code == 401, response.text
        assert response.json()["error"]["type"] == "AuthenticationRequired"

    malformed = send(endpoint, token, {"status": "DONE"})
    assert malformed.status_code == 400
    assert malformed.json()["error"]["message"].startswith("Metadata format invalid")
    assert heat.stacks.get(stack_id).stack_status == "CREATE_IN_PROGRESS"

    # The tenant's own token may signal too, through heatclient, as in Heat.
    heat.resources.signal(stack_id, "handle", data={"data": "from heatclient"})
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    assert output(heat, stack_id, "data") == '{"1": "from heatclient"}'

    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    assert send(endpoint, token).status_code == 401
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.resources.signal(stack_id, "handle")


@pytest.mark.parametrize("backend", ["kiln_all", "kiln_postgresql"])
def test_signals_sent_at_once_are_each_counted(request: pytest.FixtureRequest,
                                               backend: str) -> None:
    """Signals without an id are numbered by arrival; concurrent ones must not share a
    number (the resource row is locked while one is numbered)."""
    kiln: servers.Kiln = request.getfixturevalue(backend)
    heat = heat_for(kiln, servers.new_tenant(kiln.env, unique("burst-")))
    stack_id = create(heat, count=8)
    found = handle_attributes(heat, stack_id)

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: send(found["endpoint"], found["token"]).status_code,
                              range(8)))

    assert codes == [200] * 8
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    assert sorted(json.loads(output(heat, stack_id, "data")), key=int) == [
        str(n) for n in range(1, 9)]
