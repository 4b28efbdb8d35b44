"""Logs an operator can use, from one kiln-all at DEBUG in JSON to a file: the access line
of a request, the worker's lines about the operation it created under the same request
id and naming the stack, and a grep of everything the process wrote for every secret it
was given (the tenant's token, a hidden parameter, a signal token, AWS credentials); and
a hidden value given only in the environment's parameter_defaults, in no read of its stack
(environment, show, export, abandon, events, outputs) nor in the logs."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.functional import servers

HIDDEN = "hidden-Zq81-value"
AWS_SECRET = "aws-secret-Xv93nT0pQ"
AWS_KEY_ID = "AKIAKILNLOGTEST0001"
TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
resources:
  kept:
    type: OS::Heat::Value
    properties: {value: {get_param: password}}
  handle:
    type: OS::Heat::WaitConditionHandle
  wait:
    type: OS::Heat::WaitCondition
    properties: {handle: {get_resource: handle}, count: 1, timeout: 60}
"""


@pytest.fixture(scope="module")
def kiln(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    state = tmp_path_factory.mktemp("logs") / "state"
    kiln = servers.start_all(
        state, None, OS_DEFAULT__DEBUG="true", OS_DEFAULT__LOG_FORMAT="json",
        OS_DEFAULT__LOG_FILE="kiln.log",  # under state_path
        # boto3's credential chain reads them (specs/aws-resources.rst).
        AWS_ACCESS_KEY_ID=AWS_KEY_ID, AWS_SECRET_ACCESS_KEY=AWS_SECRET)
    yield kiln
    kiln.stop()


def test_one_request_followed_through_the_logs_with_no_secret_in_them(
        kiln: servers.Kiln) -> None:
    tenant = servers.new_tenant(kiln.env, "logs")
    headers = {"X-Auth-Token": tenant.token, "Accept": "application/json"}
    stacks = f"{kiln.endpoint(tenant.tenant_id)}/stacks"
    created = requests.post(stacks, headers=headers, timeout=10, json={
        "stack_name": "logged", "template": TEMPLATE, "parameters": {"password": HIDDEN}})
    assert created.status_code == 201, created.text
    request_id = created.headers["x-openstack-request-id"]
    stack_id = created.json()["stack"]["id"]
    stack_url = f"{stacks}/logged/{stack_id}"
    signal_token = handle_token(stack_url, headers)
    signalled = requests.post(f"{stack_url}/resources/handle/signal", timeout=10, json={},
                              headers={"X-Auth-Token": signal_token})
    assert signalled.status_code == 200, signalled.text
    wait_for(lambda: requests.get(stack_url, headers=headers, timeout=10).json()[
        "stack"]["stack_status"] == "CREATE_COMPLETE")

    log_file = pathlib.Path(kiln.env["OS_DEFAULT__STATE_PATH"]) / "kiln.log"
    lines = wait_for(lambda: ended(log_file, stack_id))
    ours = [line for line in lines if line["request_id"] == request_id]
    [access] = [line for line in ours if line["logger"] == "kiln.access"]
    assert (access["tenant_id"], access["method"], access["path"], access["status"]) == (
        tenant.tenant_id, "POST", f"/v1/{tenant.tenant_id}/stacks", 201)
    worker = [line for line in ours if line["logger"].startswith("engine.worker.")]
    messages = {line["message"] for line in worker}
    assert f"stack logged/{stack_id} CREATE COMPLETE" in messages
    assert {"resource kept: CREATE started", "resource handle: CREATE finished"} <= messages
    assert {(line["tenant_id"], line["stack_name"], line["stack_id"])
            for line in worker} == {(tenant.tenant_id, "logged", stack_id)}
    assert len({line["operation_id"] for line in worker}) == 1

    everything = log_file.read_text() + kiln.logs()  # the file, and stdout and stderr
    for secret in (tenant.token, HIDDEN, signal_token, AWS_SECRET):
        assert secret not in everything


DEFAULTED = "defaulted-Kq27-value"
# The hidden value comes from the environment's parameter_defaults alone; it reaches a
# property, an output and, known only once ``word`` exists, a failure's reason.
DEFAULTED_TEMPLATE = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 4}
  kept:
    type: OS::Heat::Value
    properties: {value: {list_join: [':', [user, {get_param: password}]]}}
  bad:
    type: OS::Heat::Value
    properties:
      type: number
      value: {list_join: ['-', [{get_param: password}, {get_attr: [word, value]}]]}
outputs:
  joined: {value: {get_attr: [kept, value]}}
"""


def test_a_hidden_value_given_in_the_parameter_defaults_is_never_shown_nor_logged(
        kiln: servers.Kiln) -> None:
    tenant = servers.new_tenant(kiln.env, "defaults")
    headers = {"X-Auth-Token": tenant.token, "Accept": "application/json"}
    stacks = f"{kiln.endpoint(tenant.tenant_id)}/stacks"
    created = requests.post(stacks, headers=headers, timeout=10, json={
        "stack_name": "defaulted", "template": DEFAULTED_TEMPLATE,
        "environment": {"parameter_defaults": {"password": DEFAULTED}}})
    assert created.status_code == 201, created.text
    stack_url = f"{stacks}/defaulted/{created.json()['stack']['id']}"

    def failed() -> dict[str, Any] | None:
        stack: dict[str, Any] = requests.get(stack_url, headers=headers,
                                             timeout=10).json()["stack"]
        return stack if stack["stack_status"] == "CREATE_FAILED" else None

    shown = wait_for(failed)

    reads = {path: requests.get(f"{stack_url}{path}", headers=headers, timeout=10)
             for path in ("/environment", "/export", "/events", "/outputs/joined",
                          "/resources/bad")}
    assert {path: read.status_code for path, read in reads.items()} == dict.fromkeys(reads, 200)
    assert reads["/environment"].json()["parameter_defaults"] == {"password": "******"}
    exported = reads["/export"].json()
    assert exported["environment"]["parameter_defaults"] == {"password": "******"}
    assert "'******-" in reads["/resources/bad"].json()["resource"]["resource_status_reason"]
    assert any("'******-" in event["resource_status_reason"]
               for event in reads["/events"].json()["events"])
    abandoned = requests.delete(f"{stack_url}/abandon", headers=headers, timeout=10)
    assert abandoned.status_code == 200, abandoned.text
    assert abandoned.json() == exported

    everything = [json.dumps(shown), abandoned.text, *(read.text for read in reads.values())]
    log_file = pathlib.Path(kiln.env["OS_DEFAULT__STATE_PATH"]) / "kiln.log"
    wait_for(lambda: "Stack ABANDON completed" in requests.get(
        stack_url, headers=headers, timeout=10).text)
    everything += [log_file.read_text(), kiln.logs()]
    assert DEFAULTED not in "\n".join(everything)


def handle_token(stack_url: str, headers: dict[str, str]) -> str:
    def token() -> str | None:
        shown = requests.get(f"{stack_url}/resources/handle", headers=headers, timeout=10,
                             params={"with_attr": "token"})
        if shown.status_code != 200:
            return None  # not planned yet
        resource = shown.json()["resource"]
        return resource["attributes"]["token"] if resource[
            "resource_status"] == "CREATE_COMPLETE" else None

    found: str = wait_for(token)
    return found


def ended(log_file: pathlib.Path, stack_id: str) -> list[dict[str, Any]] | None:
    """Every line of the log file, each one JSON, once the operation's end is in it."""
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    return lines if any(line["message"].startswith(f"stack logged/{stack_id} CREATE ")
                        for line in lines) else None


def wait_for(probe: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{probe} did not come true in {timeout} s")
