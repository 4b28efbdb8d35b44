"""Approval gates in the console, in a real browser, against a kiln-all of this module's
own: the built-in ``approval`` plugin configured to ask for every stack holding an
``OS::Heat::RandomString`` (the shared kiln-all asks for nothing). A parked operation seen
by a member and by the operator pages, approved from the browser and then completing;
a hidden tab that stops polling, a decision the API refuses shown as its error, and an
update's template shown once the approved update has stored it."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status
from tests.functional.console.test_console import sign_in, snapshot, stack_url

RULES = """\
rules:
  - name: random-strings
    approvers: the console's testers
    max_count: {type: "OS::Heat::RandomString", limit: 0}
"""

GATED = """\
heat_template_version: 2018-08-31
resources:
  secret: {type: OS::Heat::RandomString, properties: {length: 12}}
  web: {type: OS::Heat::None, depends_on: [secret]}
"""

PLAIN = """\
heat_template_version: 2018-08-31
resources:
  web: {type: OS::Heat::None}
"""
# An update the gate parks (a RandomString), and that runs a few seconds once approved.
GROWN = """\
heat_template_version: 2018-08-31
resources:
  web: {type: OS::Heat::None}
  secret: {type: OS::Heat::RandomString, properties: {length: 12}}
  slow:
    type: OS::Heat::TestResource
    depends_on: [secret]
    properties: {value: one, action_wait_secs: {create: 4}}
"""


class Gated:
    """The module's kiln-all, a tenant with a member and an admin token."""

    def __init__(self, kiln: servers.Kiln) -> None:
        self.kiln = kiln
        self.member = servers.new_tenant(kiln.env, unique("gated-"))
        self.admin = servers.new_token(kiln.env, self.member.tenant_id, "admin")
        self.heat = heat_for(kiln, self.member)
        self.console = kiln.url + "/console"

    def parked(self, prefix: str) -> tuple[str, str]:
        """A new stack whose create waits at the approval gate: its name and id."""
        name = unique(prefix)
        stack_id = self.heat.stacks.create(stack_name=name, template=GATED)["stack"]["id"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.heat.stacks.get(stack_id).stack_status_reason.startswith(
                    "Waiting for approval"):
                return name, stack_id
            time.sleep(0.1)
        raise AssertionError(f"stack {name} never waited for approval")

    def decide(self, name: str, stack_id: str, decision: str) -> int:
        request = urllib.request.Request(
            f"{self.kiln.endpoint(self.member.tenant_id)}/stacks/{name}/{stack_id}/approval",
            method="POST", data=json.dumps({"decision": decision}).encode(),
            headers={"X-Auth-Token": self.admin.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gated]:
    root = tmp_path_factory.mktemp("kiln-console-gated")
    rules = root / "approval.yaml"
    rules.write_text(RULES)
    kiln = servers.start_all(root / "state", None,
                             OS_LIFECYCLE_APPROVAL__RULES_FILE=str(rules))
    try:
        yield Gated(kiln)
    finally:
        kiln.stop()


def test_a_parked_operation_is_approved_from_the_browser_and_completes(
        page: Page, gated: Gated) -> None:
    name, stack_id = gated.parked("approve")

    # A member sees what the operation waits for, and no buttons: deciding is an admin's.
    sign_in(page, gated.console, gated.member)
    page.goto(stack_url(gated.console, gated.member, name, stack_id))
    box = page.locator("#approval")
    expect(box).to_contain_text("Waiting for approval of the CREATE")
    expect(box).to_contain_text("random-strings")
    expect(box.get_by_role("button")).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, gated.console, gated.admin)
    page.get_by_role("link", name="Operations").click()
    row = page.locator("#operator-body").get_by_role("row", name=re.compile(
        rf"\b{name}\b"))
    expect(row).to_contain_text("waiting")
    expect(row).to_contain_text("PENDING")
    snapshot(page, "approval-operator-operations-parked")
    row.get_by_role("link", name=name).click()

    expect(box).to_contain_text("Waiting for approval of the CREATE")
    expect(page.locator("#refresh-rate")).to_have_text(re.compile("every 2 s"))
    box.get_by_label("Comment").fill("CHG-2112 looked at it")
    snapshot(page, "approval-waiting-for-an-admin")
    box.get_by_role("button", name="Approve").click()

    expect(page.locator("#stack-summary .status")).to_contain_text(
        "CREATE_COMPLETE", timeout=15_000)
    expect(box).to_be_hidden()
    page.get_by_role("link", name="Lifecycle").click()
    calls = page.locator("#lifecycle-calls")
    expect(calls.get_by_role("row", name=re.compile("^approval pre-op.*pending"))).to_have_count(1)
    expect(calls.get_by_role("row", name=re.compile("^approval pre-op.*approved"))).to_contain_text(
        "CHG-2112")
    # One operation, headed by its action and id, the decision's call in it too.
    recorded = gated.heat.http_client.get(
        f"/stacks/{name}/{stack_id}/lifecycle").json()["lifecycle"]["calls"]
    [operation_id] = {call["operation_id"] for call in recorded}
    expect(calls.locator(".operation")).to_have_count(1)
    expect(calls.locator(".operation h3")).to_contain_text(
        f"CREATE operation {operation_id[:8]}")
    page.get_by_role("link", name="Events").click()
    expect(page.locator("#event-timeline")).to_contain_text("Approval gate: approved by")
    snapshot(page, "approval-approved-and-complete")
    # The plugins page names the operation of each recent call.
    page.get_by_role("link", name="Plugins").click()
    recent = page.get_by_role("region", name="Recent calls of approval")
    expect(recent.get_by_role("row", name=re.compile(rf"\b{name}\b")).first).to_contain_text(
        operation_id[:8])


def test_a_hidden_tab_stops_polling_and_a_refused_decision_shows_the_apis_error(
        page: Page, gated: Gated) -> None:
    name, stack_id = gated.parked("hidden")
    sign_in(page, gated.console, gated.admin)
    page.goto(stack_url(gated.console, gated.member, name, stack_id))
    box = page.locator("#approval")
    expect(box.get_by_role("button", name="Approve")).to_be_visible()

    # The tab goes to the background: no poll until it shows again.
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.evaluate("""() => {
        Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
        document.dispatchEvent(new Event("visibilitychange"));
    }""")
    # A tick under way when the tab hid may still finish its reads: count after it.
    page.wait_for_timeout(700)
    requests.clear()
    page.wait_for_timeout(2500)
    assert [url for url in requests if "/v1/" in url] == []

    # Only a button pressed decides: the form submitted otherwise (a script, a browser's
    # own submission) sends nothing.
    page.evaluate("document.querySelector('#approval form').requestSubmit()")
    page.wait_for_timeout(300)
    assert [url for url in requests if "/v1/" in url] == []

    # Someone else decided meanwhile: the page's decision is refused, and says why.
    assert gated.decide(name, stack_id, "reject") == 200
    box.get_by_role("button", name="Approve").click()
    problems = page.locator("#approval-problems")
    expect(problems).to_contain_text("Conflict (409)")
    expect(problems).to_contain_text("The approve was not taken.")

    page.evaluate("""() => {
        Object.defineProperty(document, "hidden", {configurable: true, get: () => false});
        document.dispatchEvent(new Event("visibilitychange"));
    }""")
    expect(page.locator("#stack-summary .status")).to_contain_text(
        "CREATE_FAILED", timeout=15_000)
    expect(page.locator("#stack-reason")).to_contain_text("rejected")


def test_the_template_shown_during_an_update_is_the_one_it_planned(
        page: Page, gated: Gated) -> None:
    name = unique("grown")
    stack_id = gated.heat.stacks.create(stack_name=name, template=PLAIN)["stack"]["id"]
    wait_for_status(gated.heat, stack_id, "CREATE_COMPLETE")
    gated.heat.stacks.update(stack_id, template=GROWN)
    sign_in(page, gated.console, gated.member)
    page.goto(stack_url(gated.console, gated.member, name, stack_id, "template"))
    # Parked at the gate, the update has not stored its template: the old one shows.
    expect(page.locator("#approval")).to_contain_text("Waiting for approval of the UPDATE")
    source = page.locator("#template-source")
    expect(source).to_contain_text("web:")
    expect(source).not_to_contain_text("secret:")

    # Approved, it is planned and stores its template, which shows while it still runs
    # (the stack's status and updated time the same since it was queued).
    assert gated.decide(name, stack_id, "approve") == 200
    expect(source).to_contain_text("slow:")
    expect(page.locator("#stack-summary .status")).to_contain_text("UPDATE_IN_PROGRESS")
