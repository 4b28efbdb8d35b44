"""Back-pressure as Heat's clients meet it: while [api] max_pending_operations operations
wait for a worker, a write that would queue another is a 503 in Heat's fault body with
Retry-After, which python-heatclient raises as HTTPServiceUnavailable, keystoneauth
waits out before it retries (when its status_code_retries allow), and the openstack CLI
reports. On kiln-api with no engine on PostgreSQL, so nothing starts what is queued."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from heatclient import client as heat_client
from heatclient import exc as heat_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from tests.functional import servers
from tests.functional.conftest import fresh_database, heat_for, unique

NONE = "heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::None}\n"
BOUND = 2


@pytest.fixture(scope="module")
def kiln(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    with fresh_database() as url:
        kiln = servers.start_split(tmp_path_factory.mktemp("back-pressure"), url, engines=0,
                                   OS_API__MAX_PENDING_OPERATIONS=str(BOUND))
        yield kiln
        kiln.stop()


@pytest.fixture(scope="module")
def full(kiln: servers.Kiln) -> dict[str, Any]:
    """A tenant whose BOUND creates were accepted and wait for a worker that never comes."""
    creds = servers.new_tenant(kiln.env, unique("busy-"))
    heat = heat_for(kiln, creds)
    ids = [heat.stacks.create(stack_name=unique("s-"), template=NONE)["stack"]["id"]
           for _ in range(BOUND)]
    return {"creds": creds, "heat": heat, "ids": ids}


def post_stack(kiln: servers.Kiln, creds: servers.Credentials) -> requests.Response:
    return requests.post(f"{kiln.endpoint(creds.tenant_id)}/stacks",
                         json={"stack_name": unique("late-"), "template": NONE},
                         headers={"X-Auth-Token": creds.token}, timeout=10)


def test_a_create_past_the_bound_is_a_heat_shaped_503_with_retry_after(
        kiln: servers.Kiln, full: dict[str, Any]) -> None:
    answer = post_stack(kiln, full["creds"])

    assert answer.status_code == 503
    assert int(answer.headers["Retry-After"]) >= 1
    body = answer.json()
    assert (body["code"], body["title"]) == (503, "Service Unavailable")
    assert body["error"]["type"] == "BacklogFull"
    assert f"try again in {answer.headers['Retry-After']} seconds" in body["error"]["message"]
    # Nothing was stored: the tenant still has its BOUND stacks.
    assert len(list(full["heat"].stacks.list())) == BOUND


def test_heatclient_raises_service_unavailable_for_every_queuing_write(
        full: dict[str, Any]) -> None:
    heat = full["heat"]
    stack_id = full["ids"][0]
    name = heat.stacks.get(stack_id).stack_name
    writes = {
        "create": lambda: heat.stacks.create(stack_name=unique("x-"), template=NONE),
        "update": lambda: heat.stacks.update(stack_id, template=NONE),
        "delete": lambda: heat.stacks.delete(stack_id),
        "check": lambda: heat.actions.check(stack_id),
        "abandon": lambda: heat.stacks.abandon(stack_id),
    }
    for write, call in writes.items():
        with pytest.raises(heat_exc.HTTPServiceUnavailable) as caught:
            call()
        assert "Kiln is busy" in str(caught.value), write
    # A cancel queues nothing: not refused (the create it stops never started).
    heat.actions.cancel_without_rollback(stack_id)
    assert heat.stacks.get(stack_id).stack_name == name


def test_another_tenant_is_refused_too_and_told_nothing_of_the_first(
        kiln: servers.Kiln, full: dict[str, Any]) -> None:
    creds = servers.new_tenant(kiln.env, unique("other-"))

    answer = post_stack(kiln, creds)

    assert answer.status_code == 503
    message = answer.json()["error"]["message"]
    assert not any(stack_id in message for stack_id in full["ids"])
    assert full["creds"].tenant_id not in message


def test_keystoneauth_waits_out_retry_after_before_it_retries(
        kiln: servers.Kiln, full: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    creds = full["creds"]
    endpoint = kiln.endpoint(creds.tenant_id)
    session = ks_session.Session(auth=token_endpoint.Token(endpoint, creds.token))
    # The openstack CLI's clients are this: heatclient on a keystoneauth session.
    heat = heat_client.Client("1", session=session, endpoint=endpoint,
                              status_code_retries=1)
    started = time.monotonic()

    with caplog.at_level(logging.WARNING, logger="keystoneauth"), \
            pytest.raises(heat_exc.HTTPServiceUnavailable):
        heat.stacks.create(stack_name=unique("retried-"), template=NONE)

    waited = time.monotonic() - started
    retries = [r.getMessage() for r in caplog.records
               if "Retriable status code 503" in r.getMessage()]
    assert len(retries) == 1  # one retry, after the delay the answer gave
    assert waited >= 1.0


def test_the_openstack_cli_reports_the_refusal(kiln: servers.Kiln, full: dict[str, Any],
                                               tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN=full["creds"].token,
               OS_ENDPOINT=kiln.endpoint(full["creds"].tenant_id))
    template = tmp_path / "t.yaml"
    template.write_text(NONE)

    result = servers.openstack_forked(env, "stack", "create", "-t", str(template),
                                      unique("cli-"), check=False)

    assert result.returncode == 1
    assert "Kiln is busy" in result.stderr
