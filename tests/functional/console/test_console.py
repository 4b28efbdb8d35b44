"""The console in a real browser against the shared kiln-all: signing in and out, a new
stack's graph going green without a reload, a failed stack's resource, reason and
template line, the update preview, the operator pages (an admin's data, a member's 403),
tenancy, a phone's width, the keyboard, late answers dropped and a nested resource's link
to its graph node. Stacks are made through the API with python-heatclient, as a tenant
would make them; the page only looks."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import FilePayload, Page, Route, expect

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status
from tests.functional.console.conftest import ARTIFACTS

SLOW = """\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true, default: s3cret-value}
  size: {type: number, default: 3}
resources:
  first:
    type: OS::Heat::TestResource
    properties: {value: one, action_wait_secs: {create: 3}}
  second:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [first, output]}}
outputs:
  echoed: {value: {get_attr: [second, output]}, description: what second says}
"""

# The reason is tenant text: markup in it must come out as text, never as markup.
FAILING = """\
heat_template_version: 2018-08-31
resources:
  good: {type: OS::Heat::None}
  bad:
    type: OS::Heat::TestResource
    depends_on: [good]
    properties: {fail: true, value: <b id=injected>markup</b>}
"""


# A nested stack whose child's resource name needs its key escaped (specs/console.rst,
# /graph: "%" and "/" percent-encoded in a key's segment).
NESTED = """\
heat_template_version: 2018-08-31
resources:
  first:
    type: OS::Heat::TestResource
    properties: {value: one, action_wait_secs: {create: 2}}
  child:
    type: OS::Heat::Stack
    depends_on: first
    properties: {template: {get_file: child.yaml}}
"""
CHILD = """\
heat_template_version: 2018-08-31
resources:
  db/primary%1: {type: OS::Heat::None}
"""

def sign_in(page: Page, console_url: str, credentials: servers.Credentials) -> None:
    page.goto(f"{console_url}/#/signin")
    page.get_by_label("Token").fill(credentials.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(re.compile("^Stacks"))


def snapshot(page: Page, name: str) -> None:
    """A picture of a moment worth seeing, beside the one the fixture takes at the end."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)


def stack_url(console_url: str, credentials: servers.Credentials, name: str,
              stack_id: str, section: str = "") -> str:
    return (f"{console_url}/#/stacks/{credentials.tenant_id}/{name}/{stack_id}"
            + (f"/{section}" if section else ""))


def yaml_file(name: str, text: str) -> FilePayload:
    """A file as the browser's file chooser would hand it over."""
    return {"name": name, "mimeType": "text/yaml", "buffer": text.encode()}


def create(heat: Any, template: str, prefix: str) -> tuple[str, str]:
    name = unique(prefix)
    return name, heat.stacks.create(stack_name=name, template=template)["stack"]["id"]


def test_a_member_signs_in_watches_a_new_stack_complete_live_and_signs_out(
        page: Page, console_url: str, member: servers.Credentials,
        member_heat: Any) -> None:
    sign_in(page, console_url, member)
    # A member has no operator pages to go to.
    expect(page.get_by_role("link", name="Workers")).to_be_hidden()
    name, stack_id = create(member_heat, SLOW, "live")
    page.goto(stack_url(console_url, member, name, stack_id))
    expect(page.locator("#stack-summary .status")).to_contain_text("CREATE_IN_PROGRESS")
    expect(page.locator("#refresh-rate")).to_have_text(re.compile("every 2 s"))
    # A mark in the page's own state: a reload would lose it.
    page.evaluate("window.consoleTestMark = 'not reloaded'")

    nodes = page.locator("#graph-canvas g.kg-node")
    expect(nodes).to_have_count(2)
    expect(page.locator('#graph-canvas g.kg-node[data-key="first"]')).to_have_class(
        re.compile(r"\bis-progress\b"))
    expect(page.locator("#stack-summary .status")).to_contain_text(
        "CREATE_COMPLETE", timeout=15_000)
    for key in ("first", "second"):
        expect(page.locator(f'#graph-canvas g.kg-node[data-key="{key}"]')).to_have_class(
            re.compile(r"\bis-complete\b"))
    assert page.evaluate("window.consoleTestMark") == "not reloaded"
    expect(page.locator("#live")).to_have_text(re.compile("CREATE_COMPLETE"))
    snapshot(page, "stack-graph-gone-green")

    page.get_by_role("link", name="Events").click()
    expect(page.locator("#event-timeline li").first).to_contain_text(name)
    expect(page.locator("#event-timeline li").first).to_contain_text("CREATE_COMPLETE")
    page.get_by_role("link", name="Parameters").click()
    parameters = page.locator("#parameter-list")
    expect(parameters.get_by_role("row", name=re.compile("^password"))).to_contain_text(
        "******")
    expect(parameters).not_to_contain_text("s3cret-value")
    page.get_by_role("link", name="Outputs").click()
    expect(page.locator("#output-list").get_by_role("row", name=re.compile("^echoed")))\
        .to_contain_text("one")

    # A token the API refuses (revoked, expired) sends the tab back to sign in, and
    # signing in again returns to the page it was on.
    page.evaluate("sessionStorage.setItem('kiln.token', 'kiln_revoked')")
    page.get_by_role("link", name="Template").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to Kiln")
    expect(page.get_by_role("status").filter(has_text="refused")).to_be_visible()
    page.get_by_label("Token").fill(member.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(rf"/{stack_id}/template$"))
    expect(page.locator("#template-source")).to_contain_text("first:")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to Kiln")
    assert page.evaluate("sessionStorage.length") == 0
    page.goto(stack_url(console_url, member, name, stack_id))
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to Kiln")


def test_a_failed_stack_shows_its_resource_reason_and_template_line_by_keyboard(
        page: Page, console_url: str, member: servers.Credentials,
        member_heat: Any) -> None:
    name, stack_id = create(member_heat, FAILING, "failed")
    wait_for_status(member_heat, stack_id, "CREATE_FAILED")
    sign_in(page, console_url, member)
    page.goto(stack_url(console_url, member, name, stack_id))
    expect(page.locator("#stack-summary")).to_contain_text("CREATE_FAILED")
    expect(page.locator("#stack-reason")).to_contain_text("Test Resource failed")
    bad = page.locator('#graph-canvas g.kg-node[data-key="bad"]')
    expect(bad).to_have_class(re.compile(r"\bis-failed\b"))
    # Two resources in a row: a short drawing (the least, 10rem), not 70% of the screen.
    drawing = page.locator("#graph-canvas svg.kg-svg").bounding_box()
    assert drawing and drawing["height"] <= 170

    # Keyboard only: Tab into the graph, the arrows to the failed resource, Enter.
    page.locator("#graph-depth").focus()
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('kg-node')"):
            break
    for _ in range(4):
        if page.evaluate("document.activeElement.dataset.key") == "bad":
            break
        page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.key") == "bad"
    page.keyboard.press("Enter")
    details = page.locator("#resource-details")
    expect(details.get_by_role("heading")).to_have_text("bad")
    expect(details).to_contain_text("CREATE_FAILED")
    expect(details).to_contain_text("Test Resource failed")
    expect(details).to_contain_text("OS::Heat::TestResource")
    snapshot(page, "failed-stack-resource-details")

    details.get_by_role("link", name=re.compile(r"^line \d+$")).click()
    expect(page).to_have_url(re.compile(r"/template\?line=\d+$"))
    line = page.locator("#template-source .src-line--target")
    expect(line).to_have_count(1)
    expect(line).to_contain_text("bad:")
    expect(line).to_have_class(re.compile(r"\bsrc-line--failed\b"))
    expect(line).to_be_focused()
    expect(page.locator("#template-failures")).to_contain_text("bad CREATE_FAILED")
    snapshot(page, "failed-stack-template-line")
    # The tenant's markup stayed text everywhere it was shown.
    assert page.locator("#injected").count() == 0


class Held:
    """Requests whose URL matches held back (the first ``count`` of them) until released:
    an answer made late, to see what the page does with it."""

    def __init__(self, page: Page, pattern: str, count: int = 1) -> None:
        self.page = page
        self.pattern = re.compile(pattern)
        self.count = count
        self.routes: list[Route] = []
        page.route(self.matches, self._hold)

    def matches(self, url: str) -> bool:
        return bool(self.pattern.search(url))

    def _hold(self, route: Route) -> None:
        if len(self.routes) < self.count:
            self.routes.append(route)
        else:
            route.continue_()

    def wait(self) -> None:
        """Until the page has asked (route handlers run while Playwright waits)."""
        for _ in range(100):
            if len(self.routes) == self.count:
                return
            self.page.wait_for_timeout(100)
        raise AssertionError(f"no request for {self.pattern.pattern}")

    def release(self) -> None:
        """Lets the held requests go, waits for their answers, and holds no more (after:
        turning the interception off lets the requests it holds go)."""
        for route in self.routes:
            with self.page.expect_response(lambda response: self.matches(response.url)):
                route.continue_()
        self.page.unroute(self.matches, self._hold)
        # What the page does with an answer follows it within a few ms (an announcement
        # is written 50 ms later).
        self.page.wait_for_timeout(300)


def test_late_answers_are_dropped_and_a_resources_link_selects_its_node_by_key(
        page: Page, console_url: str, member: servers.Credentials,
        member_heat: Any) -> None:
    sign_in(page, console_url, member)
    name = unique("nested")
    stack_id = member_heat.stacks.create(stack_name=name, template=NESTED,
                                         files={"child.yaml": CHILD})["stack"]["id"]
    page.goto(stack_url(console_url, member, name, stack_id))
    expect(page.locator("#stack-summary .status")).to_contain_text("CREATE_IN_PROGRESS")

    # A poll under way when the page is left answers on the next page: the stack has
    # completed meanwhile, and the stacks page must not announce it.
    stack_read = Held(page, rf"/stacks/{name}/{stack_id}\?resolve_outputs=false$")
    page.get_by_role("link", name="Events").click()  # a tab shown polls at once
    stack_read.wait()
    wait_for_status(member_heat, stack_id, "CREATE_COMPLETE")
    page.goto(f"{console_url}/#/stacks")
    expect(page.get_by_role("heading", level=1)).to_have_text(re.compile("^Stacks"))
    stack_read.release()
    assert name not in (page.locator("#live").text_content() or "")

    # The first poll's graph (no nested stack) answers after the depth chosen since: it
    # is not drawn over the child's resources, and there is one drawing.
    first_graph = Held(page, r"/graph\?nested_depth=0$")
    page.goto(stack_url(console_url, member, name, stack_id))
    first_graph.wait()
    page.locator("#graph-depth").select_option("1")
    # Time for a read of the new depth to be drawn first, were it made beside the held
    # one (it is not: the page asks for it in the poll after).
    page.wait_for_timeout(700)
    first_graph.release()
    drawing = page.locator("#graph-canvas svg.kg-svg")
    expect(drawing).to_have_count(1)
    expect(drawing).to_have_attribute("aria-label", re.compile(": 3 resources$"),
                                      timeout=3000)

    # The resource list links the child's resource to its node by the graph's key.
    page.get_by_role("navigation", name="Stack sections").get_by_role(
        "link", name="Resources").click()
    page.locator("#resource-list").get_by_role("link", name="db/primary%1").click()
    expect(page).to_have_url(re.compile(
        rf"/{stack_id}\?select=child%2Fdb%252Fprimary%25251$"))
    details = page.locator("#resource-details")
    expect(details.get_by_role("heading")).to_have_text("db/primary%1")
    expect(details).to_contain_text("child/db%2Fprimary%251")
    expect(page.locator('#graph-canvas g.kg-node[data-key="child/db%2Fprimary%251"]'))\
        .to_have_class(re.compile(r"\bis-selected\b"))
    snapshot(page, "nested-resource-selected-from-the-list")


def test_an_update_preview_of_a_chosen_file_and_a_refused_one_with_its_line(
        page: Page, console_url: str, member: servers.Credentials,
        member_heat: Any) -> None:
    name, stack_id = create(member_heat, FAILING.replace("fail: true", "fail: false"),
                            "preview")
    wait_for_status(member_heat, stack_id, "CREATE_COMPLETE")
    sign_in(page, console_url, member)
    page.goto(stack_url(console_url, member, name, stack_id, "preview"))

    grown = ("heat_template_version: 2018-08-31\nresources:\n"
             "  good: {type: OS::Heat::None}\n  more: {type: OS::Heat::None}\n")
    page.get_by_label("Template file").set_input_files(files=yaml_file("grown.yaml", grown))
    page.get_by_role("button", name="Preview the update").click()
    summary = page.locator("#preview-summary")
    expect(summary.locator('[data-change="added"]')).to_have_text(re.compile("Added: 1$"))
    expect(summary.locator('[data-change="deleted"]')).to_have_text(
        re.compile("Deleted: 1$"))
    expect(summary.locator('[data-change="unchanged"]')).to_have_text(
        re.compile("Unchanged: 1$"))
    expect(page.locator("#preview-added")).to_contain_text("more")
    expect(page.locator("#preview-verdicts")).to_be_visible()
    snapshot(page, "update-preview")

    broken = grown + "  worse:\n    type: OS::Heat::None\n    depends_on: [nosuch]\n"
    page.get_by_label("Template file").set_input_files(files=yaml_file("broken.yaml", broken))
    page.get_by_role("button", name="Preview the update").click()
    expect(page.locator("#preview-result .error")).to_contain_text("Bad Request (400)")
    marked = page.locator("#preview-source .src-line--target")
    expect(marked).to_have_count(1)
    # Kiln names the line of the bad reference: the 7th of the uploaded text.
    expect(marked).to_have_attribute("data-line", "7")
    expect(marked).to_contain_text("depends_on: [nosuch]")
    snapshot(page, "update-preview-refused-line")


def test_operator_pages_show_an_admin_their_data_and_a_member_the_403(
        page: Page, console_url: str, kiln_all: servers.Kiln, admin: servers.Credentials,
        member: servers.Credentials, member_heat: Any) -> None:
    name, stack_id = create(member_heat, FAILING, "seen")
    wait_for_status(member_heat, stack_id, "CREATE_FAILED")
    sign_in(page, console_url, admin)
    page.get_by_label("Every tenant").check()
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Stacks of every tenant")
    row = page.locator("#stack-list").get_by_role("row", name=re.compile(f"^{name}"))
    expect(row).to_contain_text(member.tenant_id)

    page.get_by_role("link", name="Operations").click()
    page.locator("#operations-state").select_option("all")
    expect(page.locator("#operator-body").get_by_role("link", name=name).first)\
        .to_be_visible()
    page.get_by_role("link", name="Workers").click()
    # The shared kiln-all's own worker, at least, heartbeats.
    expect(page.locator("#operator-body tbody .flag--yes").first).to_have_text(
        re.compile(r"\balive$"))
    snapshot(page, "operator-workers")
    page.get_by_role("link", name="Plugins").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Lifecycle plugins")
    expect(page.locator("#operator-body section.plugin").first).to_contain_text(
        "Entry point")
    snapshot(page, "operator-plugins")

    page.get_by_role("button", name="Sign out").click()
    sign_in(page, console_url, member)
    for label in ("Operations", "Workers", "Plugins"):
        expect(page.get_by_role("link", name=label)).to_be_hidden()
    for path in ("operations", "workers", "plugins"):
        page.goto(f"{console_url}/#/operator/{path}")
        expect(page.locator("#operator-problems")).to_contain_text("Forbidden (403)")
        expect(page.locator("#operator-body")).to_be_empty()
        # Shown once: no next poll is set (the poller shows its interval on <main>).
        assert page.locator("#main").get_attribute("data-poll-ms") is None


def test_a_member_never_sees_another_tenants_stack(
        page: Page, console_url: str, kiln_all: servers.Kiln,
        member: servers.Credentials) -> None:
    other = servers.new_tenant(kiln_all.env, unique("console-other-"))
    other_heat = heat_for(kiln_all, other)
    name, stack_id = create(other_heat, FAILING, "theirs")
    wait_for_status(other_heat, stack_id, "CREATE_FAILED")
    sign_in(page, console_url, member)
    expect(page.locator("#stack-list")).not_to_contain_text(name)

    page.goto(stack_url(console_url, other, name, stack_id))
    expect(page.locator("#stack-problems")).to_contain_text("Not Found (404)")
    expect(page.locator("#stack-problems")).to_contain_text(
        f"The Stack ({name}) could not be found.")
    expect(page.locator("#stack-summary")).to_be_empty()
    expect(page.get_by_role("navigation", name="Stack sections")).to_be_hidden()
    for section in ("events", "template"):
        page.goto(stack_url(console_url, other, name, stack_id, section))
        expect(page.locator("#stack-problems")).to_contain_text("Not Found (404)")
        expect(page.locator("body")).not_to_contain_text("Test Resource failed")


def test_a_phones_width_stacks_the_page_without_scrolling_it_sideways(
        page: Page, console_url: str, member: servers.Credentials,
        member_heat: Any) -> None:
    name, stack_id = create(member_heat, FAILING, "phone")
    wait_for_status(member_heat, stack_id, "CREATE_FAILED")
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, console_url, member)
    expect(page.locator("#stack-list")).to_contain_text(name)
    for section in ("", "resources", "events", "template"):
        page.goto(stack_url(console_url, member, name, stack_id, section))
        expect(page.locator("#stack-summary")).to_contain_text("CREATE_FAILED")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, section
    # Stacked: the details panel is under the graph, not beside it.
    page.goto(stack_url(console_url, member, name, stack_id))
    canvas = page.locator("#graph-canvas").bounding_box()
    details = page.locator("#resource-details").bounding_box()
    assert canvas and details and details["y"] >= canvas["y"] + canvas["height"]
    # The drawing is as tall as two resources need, so the details are near.
    drawing = page.locator("#graph-canvas svg.kg-svg").bounding_box()
    assert drawing and drawing["height"] <= 170
    snapshot(page, "phone-stack-graph")
