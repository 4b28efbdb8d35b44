"""The console's dependency graph (engine/console/static/js/graph.js) in headless Chromium:
the layout's invariants, a 300-resource stack, and the view's live updates, nested stacks,
groups, search, keyboard and mouse, and its height sized to the graph (fitHeight).

The module is driven on its own page, served from the console's static directory by a
loopback HTTP server with the console's Content-Security-Policy, so a style or script the
policy refuses fails the test (a kiln-all is not needed to draw a graph)."""

from __future__ import annotations

import functools
import http.server
import pathlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from engine.api.middleware import ConsoleHeaders
from tests.functional.console.conftest import ARTIFACTS

STATIC = pathlib.Path(__file__).resolve().parents[3] / "engine" / "console" / "static"
CSP = ConsoleHeaders.HEADERS["Content-Security-Policy"]

HARNESS = {
    "/graph.html": ("text/html", """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>graph</title>
<link rel="stylesheet" href="/css/graph.css">
<link rel="stylesheet" href="/harness.css">
<script type="module" src="/harness.js"></script>
</head><body><div id="graph"></div></body></html>
"""),
    "/favicon.ico": ("image/x-icon", ""),
    "/harness.css": ("text/css", "body { margin: 16px; } #graph { --kg-height: 640px; }\n"),
    "/harness.js": ("text/javascript", """
window.violations = [];
document.addEventListener('securitypolicyviolation',
  (event) => window.violations.push(`${event.violatedDirective} ${event.blockedURI}`));
const kg = await import('/js/graph.js');
window.kg = kg;
window.selections = [];
window.view = new kg.GraphView(document.getElementById('graph'),
  {onSelect: (key) => window.selections.push(key)});
document.body.dataset.ready = 'true';
"""),
}


class Handler(http.server.SimpleHTTPRequestHandler):
    """The static directory plus the harness, every answer under the console's CSP."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        page = HARNESS.get(self.path)
        if page is None:
            super().do_GET()
            return
        body = page[1].encode()
        self.send_response(200)
        self.send_header("Content-Type", f"{page[0]}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def static_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(STATIC)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def graph_page(page: Page, static_url: str) -> Iterator[Page]:
    """The harness page: ``window.kg`` (the module), ``window.view`` (a GraphView) and
    ``window.selections`` (what its onSelect was called with)."""
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text)
            if message.type == "error" else None)
    page.goto(static_url + "/graph.html")
    # Not wait_for_function: its polling evaluates a string, which the CSP refuses.
    page.locator("body[data-ready='true']").wait_for(state="attached")
    yield page
    violations = page.evaluate("window.violations")
    assert violations == [] and console == [], (violations, console)


# ---------------------------------------------------------------------------------------
# Graphs, as GET .../graph answers them.

def resource(key: str, type_: str, action: str = "CREATE", status: str = "COMPLETE",
             **extra: Any) -> dict[str, Any]:
    parent, _, name = key.rpartition("/")
    return {"key": key, "name": name, "type": type_, "action": action, "status": status,
            "status_reason": extra.pop("status_reason", ""),
            "physical_resource_id": extra.pop("physical_resource_id", f"id-{key}"),
            "stack_id": "s-1", "parent": parent or None,
            "nested_stack_id": extra.pop("nested_stack_id", None),
            "in_template": extra.pop("in_template", True),
            "replaced": extra.pop("replaced", None), "line": None, **extra}


def small_graph() -> dict[str, Any]:
    """An update in flight: every status, a replacement, a deletion, a nested stack."""
    nodes = [
        resource("net", "OS::Neutron::Net"),
        resource("subnet", "OS::Neutron::Subnet"),
        resource("secgroup", "OS::Neutron::SecurityGroup", "UPDATE"),
        resource("port", "OS::Neutron::Port", "UPDATE", "IN_PROGRESS",
                 replaced={"physical_resource_id": "old-port-7f3a"}),
        resource("server", "OS::Nova::Server", "UPDATE", "FAILED",
                 status_reason="Quota exceeded for cores: requested 8, limit 4"),
        resource("volume", "OS::Cinder::Volume", "INIT"),
        resource("attachment", "OS::Cinder::VolumeAttachment", "INIT"),
        resource("floating_ip", "OS::Neutron::FloatingIP", "DELETE", "IN_PROGRESS",
                 in_template=False),
        resource("app", "OS::Heat::Stack", nested_stack_id="s-2"),
        resource("app/config", "OS::Heat::SoftwareConfig"),
        resource("app/deploy", "OS::Heat::SoftwareDeployment", "CREATE", "IN_PROGRESS"),
    ]
    edges = [("net", "subnet"), ("subnet", "port"), ("secgroup", "port"),
             ("port", "server"), ("port", "floating_ip"), ("server", "attachment"),
             ("volume", "attachment"), ("server", "app"), ("app/config", "app/deploy")]
    return {"stack": {"id": "s-1", "name": "web", "action": "UPDATE",
                      "status": "IN_PROGRESS", "status_reason": ""},
            "nodes": nodes, "edges": [{"from": a, "to": b} for a, b in edges]}


def large_graph() -> dict[str, Any]:
    """300 resources: a network, a ResourceGroup of 60 two-resource nested stacks, 70
    alike passwords, a 40-resource tree of values, all statuses."""
    nodes = [resource(key, type_) for key, type_ in [
        ("net", "OS::Neutron::Net"), ("subnet", "OS::Neutron::Subnet"),
        ("router", "OS::Neutron::Router"), ("router_iface", "OS::Neutron::RouterInterface"),
        ("secgroup", "OS::Neutron::SecurityGroup"), ("config", "OS::Heat::CloudConfig"),
        ("lb", "OS::Octavia::LoadBalancer"), ("lb_pool", "OS::Octavia::Pool"),
        ("secrets", "OS::Heat::Value")]]
    edges = [("net", "subnet"), ("router", "router_iface"), ("subnet", "router_iface"),
             ("subnet", "lb"), ("lb", "lb_pool")]
    nodes.append(resource("workers", "OS::Heat::ResourceGroup", "CREATE", "IN_PROGRESS",
                          nested_stack_id="s-workers"))
    edges += [("subnet", "workers"), ("secgroup", "workers"), ("config", "workers"),
              ("workers", "lb_pool")]
    for i in range(60):
        status = "FAILED" if i == 27 else "IN_PROGRESS" if 20 <= i < 30 else "COMPLETE"
        member = f"workers/{i}"
        nodes.append(resource(member, "Kiln::Worker", "CREATE", status,
                              nested_stack_id=f"s-w{i}"))
        nodes.append(resource(f"{member}/port", "OS::Neutron::Port"))
        nodes.append(resource(f"{member}/server", "OS::Nova::Server", "CREATE",
                              "FAILED" if i == 27 else status))
        edges.append((f"{member}/port", f"{member}/server"))
    for i in range(70):
        nodes.append(resource(f"password_{i}", "OS::Heat::RandomString"))
        edges.append((f"password_{i}", "secrets"))
    for i in range(40):
        nodes.append(resource(f"setting_{i}", "OS::Heat::Value",
                              "INIT" if i >= 36 else "CREATE"))
        if i:
            edges.append((f"setting_{(i - 1) // 2}", f"setting_{i}"))
    edges.append(("secrets", "setting_0"))
    assert len(nodes) == 300
    return {"stack": {"id": "s-1", "name": "fleet", "action": "CREATE",
                      "status": "IN_PROGRESS", "status_reason": ""},
            "nodes": nodes, "edges": [{"from": a, "to": b} for a, b in edges]}


# ---------------------------------------------------------------------------------------
# Helpers run in the page.

LAYOUT = """([graph, options]) => {
  const started = performance.now();
  const result = kg.layout(graph.nodes, graph.edges, options);
  const ms = performance.now() - started;
  return {ms, width: result.width, height: result.height, edges: result.edges,
    nodes: result.nodes.map((n) => ({key: n.key, kind: n.kind, parent: n.parent,
      members: n.members ?? null})),
    positions: Object.fromEntries(result.positions)};
}"""


def laid_out(page: Page, graph: dict[str, Any], **options: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(LAYOUT, [graph, options])
    return result


def check_layout(result: dict[str, Any]) -> None:
    """Every visible edge runs from a lower layer to a higher one between siblings, left to
    right; no two siblings overlap; a box holds its contents; all lies in the drawing."""
    positions = result["positions"]
    for edge in result["edges"]:
        a, b = positions[edge["from"]], positions[edge["to"]]
        assert a["parent"] == b["parent"], edge
        assert a["layer"] < b["layer"], edge
        assert a["x"] + a["width"] < b["x"], edge
    siblings: dict[str | None, list[dict[str, Any]]] = {}
    for key, p in positions.items():
        siblings.setdefault(p["parent"], []).append({"key": key, **p})
        assert p["x"] >= 0 and p["x"] + p["width"] <= result["width"] + 0.5, key
        assert p["y"] >= 0 and p["y"] + p["height"] <= result["height"] + 0.5, key
        if p["parent"] is not None:
            box = positions[p["parent"]]
            assert box["x"] < p["x"] and p["x"] + p["width"] < box["x"] + box["width"], key
            assert box["y"] < p["y"] and p["y"] + p["height"] < box["y"] + box["height"], key
    for group in siblings.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                apart = (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                         or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
                assert apart, (a, b)


def card(page: Page, key: str) -> Any:
    return page.locator(f'.kg-node[data-key="{key}"]')


def card_style(page: Page, key: str, name: str) -> str:
    """A computed style of the card (the border rectangle) of node ``key``."""
    value: str = page.evaluate("""([key, name]) => getComputedStyle(
      document.querySelector(`.kg-node[data-key='${key}'] .kg-card`))[name]""", [key, name])
    return value


def view_state(page: Page) -> dict[str, Any]:
    state: dict[str, Any] = page.evaluate("""() => ({transform: view.transform,
      selected: view.selected, layoutCount: view.layoutCount,
      focused: document.activeElement?.dataset?.key ?? null})""")
    return state


def show(page: Page, graph: dict[str, Any]) -> None:
    page.evaluate("(graph) => view.update(graph)", graph)


# ---------------------------------------------------------------------------------------
# The layout.

def test_layout_is_layered_and_without_overlaps(graph_page: Page) -> None:
    graph = small_graph()
    collapsed = laid_out(graph_page, graph)
    check_layout(collapsed)
    assert "app/config" not in collapsed["positions"]
    assert {"from": "app/config", "to": "app/deploy"} not in collapsed["edges"]
    # Longest path from the sources: the port waits for net, then subnet.
    layer = {key: p["layer"] for key, p in collapsed["positions"].items()}
    assert layer["net"] == 0 and layer["subnet"] == 1 and layer["port"] == 2
    assert layer["server"] == 3 and layer["attachment"] == 4
    # A source moves next to its only dependent rather than staying in the first layer.
    assert layer["volume"] == 3

    expanded = laid_out(graph_page, graph, expanded=["app"])
    check_layout(expanded)
    inner = expanded["positions"]
    assert inner["app/config"]["parent"] == "app"
    assert inner["app/config"]["layer"] < inner["app/deploy"]["layer"]
    assert inner["app"]["width"] > collapsed["positions"]["app"]["width"]


def test_three_hundred_resources_stay_legible(graph_page: Page) -> None:
    graph = large_graph()
    default = laid_out(graph_page, graph)
    check_layout(default)
    kinds = {node["key"]: node for node in default["nodes"]}
    # The 70 passwords are one group; the ResourceGroup's 180 resources are inside it.
    groups = [node for node in default["nodes"] if node["kind"] == "group"]
    assert len(groups) == 1 and len(groups[0]["members"]) == 70
    assert "workers" in kinds and "workers/0" not in kinds
    assert len(default["nodes"]) <= 60
    assert default["width"] <= 2500 and default["height"] <= 2500
    assert default["ms"] < 1000, default["ms"]

    # Everything open (each nested stack, each group): still laid out quickly and right.
    keys = [node["key"] for node in graph["nodes"]] + [groups[0]["key"]]
    opened = laid_out(graph_page, graph, expanded=keys)
    member_group = next(node for node in opened["nodes"]
                        if node["kind"] == "group" and node["parent"] == "workers")
    opened = laid_out(graph_page, graph, expanded=keys + [member_group["key"]])
    check_layout(opened)
    assert len([n for n in opened["nodes"] if n["kind"] == "resource"]) == 300
    assert opened["ms"] < 2000, opened["ms"]
    # And with no grouping at all: 300 single nodes.
    flat = laid_out(graph_page, graph, expanded=keys, groupThreshold=0)
    check_layout(flat)
    assert len(flat["nodes"]) == 300 and flat["ms"] < 2000, flat["ms"]

    show(graph_page, graph)
    assert graph_page.locator(".kg-node").count() == len(default["nodes"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    graph_page.locator(".kg-svg").screenshot(path=ARTIFACTS / "graph-300.png")
    graph_page.evaluate("view.expand('workers')")
    graph_page.locator(".kg-svg").screenshot(path=ARTIFACTS / "graph-300-workers.png")


# ---------------------------------------------------------------------------------------
# The view.

def test_statuses_read_without_colour(graph_page: Page) -> None:
    show(graph_page, small_graph())
    expected = {
        "net": ("is-complete", "✓", "CREATE_COMPLETE"),
        "port": ("is-progress", "◐", "UPDATE_IN_PROGRESS · replaced"),
        "server": ("is-failed", "✗", "UPDATE_FAILED"),
        "volume": ("is-init", "○", "INIT_COMPLETE"),
        "floating_ip": ("is-progress", "◐", "DELETE_IN_PROGRESS · deleting"),
    }
    for key, (category, glyph, label) in expected.items():
        node = card(graph_page, key)
        assert category in (node.get_attribute("class") or "").split(), key
        assert node.locator(".kg-glyph").text_content() == glyph, key
        assert node.locator(".kg-status").text_content() == label, key
    assert card(graph_page, "server").get_attribute("aria-label") == (
        "server, OS::Nova::Server, UPDATE_FAILED, "
        "Quota exceeded for cores: requested 8, limit 4")
    assert card(graph_page, "port").locator(".kg-ghost").count() == 1
    assert "replaced, old resource old-port-7f3a" in (
        card(graph_page, "port").get_attribute("aria-label") or "")
    assert card(graph_page, "floating_ip").locator(".kg-strike").count() == 1
    assert "being deleted" in (card(graph_page, "floating_ip").get_attribute("aria-label") or "")
    assert card(graph_page, "app").get_attribute("aria-expanded") == "false"
    # The border tells the states apart too, and in-progress cards move unless the
    # reader asked for less motion.
    assert card_style(graph_page, "port", "strokeDasharray") != "none"
    assert card_style(graph_page, "net", "strokeDasharray") == "none"
    assert card_style(graph_page, "port", "animationName") == "kg-march"
    graph_page.emulate_media(reduced_motion="reduce")
    assert card_style(graph_page, "port", "animationName") == "none"
    graph_page.emulate_media(reduced_motion="no-preference")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    graph_page.evaluate("view.expand('app'); view.fit()")
    graph_page.locator("#graph").screenshot(path=ARTIFACTS / "graph-small.png")


def test_update_keeps_the_view_and_relayouts_only_on_structure_change(
        graph_page: Page) -> None:
    graph = small_graph()
    show(graph_page, graph)
    graph_page.evaluate("""view.zoom(1.5); view.select('server'); view.expand('app');
      document.querySelector('.kg-node[data-key="net"] .kg-name').dataset.mark = 'kept'""")
    card(graph_page, "port").focus()
    before = view_state(graph_page)
    assert before["selected"] == "server" and before["focused"] == "port"

    # A poll with new statuses only: restyled in place.
    for node in graph["nodes"]:
        if node["key"] == "port":
            node.update(action="UPDATE", status="COMPLETE", replaced=None)
    show(graph_page, graph)
    after = view_state(graph_page)
    assert after == before
    assert "is-complete" in (card(graph_page, "port").get_attribute("class") or "")
    assert card(graph_page, "port").locator(".kg-ghost").count() == 0
    assert "is-selected" in (card(graph_page, "server").get_attribute("class") or "")
    # An unchanged card is left alone (not redrawn under the pointer).
    assert card(graph_page, "net").locator(".kg-name[data-mark='kept']").count() == 1

    # A new resource: laid out again, the zoom, pan, selection and focus kept.
    graph["nodes"].append(resource("dns", "OS::Designate::RecordSet", "CREATE", "IN_PROGRESS"))
    graph["edges"].append({"from": "floating_ip", "to": "dns"})
    show(graph_page, graph)
    grown = view_state(graph_page)
    assert grown["layoutCount"] == before["layoutCount"] + 1
    assert {**grown, "layoutCount": 0} == {**before, "layoutCount": 0}
    assert card(graph_page, "dns").count() == 1
    assert card(graph_page, "app/deploy").count() == 1
    assert graph_page.locator(".kg-node[tabindex='0']").count() == 1


def test_nested_stack_collapses_and_expands(graph_page: Page) -> None:
    show(graph_page, small_graph())
    assert card(graph_page, "app/deploy").count() == 0
    assert graph_page.locator(".kg-box").count() == 0

    card(graph_page, "app").locator(".kg-toggle").click()
    assert card(graph_page, "app").get_attribute("aria-expanded") == "true"
    assert card(graph_page, "app/config").count() == 1
    assert card(graph_page, "app/deploy").count() == 1
    assert graph_page.locator(".kg-box").count() == 1
    assert graph_page.evaluate("view.expanded") == ["app"]

    graph_page.evaluate("view.collapse('app')")
    assert card(graph_page, "app/deploy").count() == 0
    graph_page.evaluate("view.expand('app')")
    assert card(graph_page, "app/deploy").count() == 1
    # Selecting a resource hidden in a collapsed stack opens the stack around it.
    graph_page.evaluate("view.collapse('app'); view.select('app/deploy')")
    assert "is-selected" in (card(graph_page, "app/deploy").get_attribute("class") or "")
    assert graph_page.evaluate("window.selections") == []


SIZED = """([graph, width]) => {
  // A second view, made with fitHeight, in a box of the given width (the harness's own
  // view keeps its fixed --kg-height).
  const box = document.createElement('div');
  box.style.width = `${width}px`;
  box.style.setProperty('--kg-height', '600px');
  box.style.setProperty('--kg-min-height', '100px');
  document.body.append(box);
  const sized = new kg.GraphView(box, {fitHeight: true, legend: false});
  sized.update(graph);
  const measure = () => ({height: sized.svg.clientHeight, layout: sized.lastLayout.height,
    layoutWidth: sized.lastLayout.width, width: sized.svg.clientWidth});
  const first = measure();
  sized.expand('app');
  const expanded = measure();
  box.remove();
  return {first, expanded};
}"""


def test_a_view_made_with_fit_height_is_as_tall_as_its_graph(graph_page: Page) -> None:
    def needed(m: dict[str, Any]) -> float:
        scale = min(1.0, (m["width"] - 32) / m["layoutWidth"])
        return float(m["layout"] * scale + 32)

    wide = graph_page.evaluate(SIZED, [small_graph(), 1600])
    first, expanded = wide["first"], wide["expanded"]
    # At life size: the graph's height and the fit's margins, not the 600 px allowed.
    assert first["width"] > first["layoutWidth"] + 32
    assert abs(first["height"] - (first["layout"] + 32)) <= 1
    assert first["height"] < 600
    # Opening a nested stack makes the graph taller, and the drawing with it.
    assert expanded["layout"] > first["layout"]
    assert abs(expanded["height"] - needed(expanded)) <= 1

    # Narrower, the graph is drawn smaller, so less tall; never under the minimum.
    narrow = graph_page.evaluate(SIZED, [small_graph(), 400])["first"]
    assert narrow["height"] < first["height"]
    assert narrow["height"] == max(100, round(needed(narrow) + 0.5))
    # 300 resources need more than the most allowed.
    assert graph_page.evaluate(SIZED, [large_graph(), 1400])["first"]["height"] == 600


def test_group_expands_on_click(graph_page: Page) -> None:
    show(graph_page, large_graph())
    group = graph_page.locator(".kg-node.is-group")
    assert group.count() == 1
    assert group.locator(".kg-name").text_content() == "70 × RandomString"
    assert group.locator(".kg-type").text_content() == "OS::Heat::RandomString"
    assert group.get_attribute("aria-label") == (
        "70 × OS::Heat::RandomString, group of 70 alike resources, 70 complete, collapsed")
    group.click()
    assert card(graph_page, "password_42").count() == 1
    assert group.get_attribute("aria-expanded") == "true"
    assert graph_page.evaluate("window.selections") == []


def test_search_highlights_matches(graph_page: Page) -> None:
    show(graph_page, small_graph())
    assert graph_page.evaluate("view.search('PORT')") == ["port"]
    assert "is-match" in (card(graph_page, "port").get_attribute("class") or "")
    assert "is-searching" in (graph_page.locator(".kg-svg").get_attribute("class") or "")
    # A match inside a collapsed nested stack lights the stack that holds it.
    assert graph_page.evaluate("view.search('softwaredeployment')") == ["app/deploy"]
    assert "is-match-inside" in (card(graph_page, "app").get_attribute("class") or "")
    assert "is-match" not in (card(graph_page, "port").get_attribute("class") or "").split()
    # The highlight survives a poll, and an empty search clears it.
    show(graph_page, small_graph())
    assert "is-match-inside" in (card(graph_page, "app").get_attribute("class") or "")
    assert graph_page.evaluate("view.search('')") == []
    assert graph_page.locator(".kg-node.is-match, .kg-node.is-match-inside").count() == 0


def test_keyboard(graph_page: Page) -> None:
    show(graph_page, small_graph())
    assert graph_page.locator(".kg-node[tabindex='0']").count() == 1
    card(graph_page, "port").focus()
    graph_page.keyboard.press("ArrowRight")
    assert view_state(graph_page)["focused"] in {"server", "floating_ip"}
    graph_page.keyboard.press("ArrowLeft")
    assert view_state(graph_page)["focused"] == "port"
    graph_page.keyboard.press("ArrowLeft")
    assert view_state(graph_page)["focused"] in {"subnet", "secgroup"}
    graph_page.keyboard.press("Enter")
    first = view_state(graph_page)["focused"]
    graph_page.keyboard.press("ArrowDown" if first == "subnet" else "ArrowUp")
    second = view_state(graph_page)["focused"]
    assert {first, second} == {"subnet", "secgroup"}
    graph_page.keyboard.press(" ")
    assert graph_page.evaluate("window.selections") == [first, second]
    assert view_state(graph_page)["selected"] == second

    scale = view_state(graph_page)["transform"]["scale"]
    graph_page.keyboard.press("+")
    assert view_state(graph_page)["transform"]["scale"] > scale
    graph_page.keyboard.press("-")
    graph_page.keyboard.press("-")
    assert view_state(graph_page)["transform"]["scale"] < scale
    graph_page.keyboard.press("0")
    assert view_state(graph_page)["transform"]["scale"] == pytest.approx(scale)

    card(graph_page, "app").focus()
    graph_page.keyboard.press("e")
    assert card(graph_page, "app/config").count() == 1
    assert view_state(graph_page)["focused"] == "app"
    graph_page.keyboard.press("ArrowDown")
    assert view_state(graph_page)["focused"] in {"app/config", "app/deploy"}


def test_mouse_selects_zooms_and_pans(graph_page: Page) -> None:
    show(graph_page, small_graph())
    card(graph_page, "server").click()
    assert graph_page.evaluate("window.selections") == ["server"]
    assert "is-selected" in (card(graph_page, "server").get_attribute("class") or "")
    assert graph_page.locator(".kg-edge.is-active").count() == 3

    box = graph_page.locator(".kg-svg").bounding_box()
    assert box is not None
    before = view_state(graph_page)["transform"]
    graph_page.mouse.move(box["x"] + 40, box["y"] + 40)
    graph_page.mouse.wheel(0, -300)
    zoomed = view_state(graph_page)["transform"]
    assert zoomed["scale"] > before["scale"]

    graph_page.mouse.down()
    graph_page.mouse.move(box["x"] + 140, box["y"] + 90, steps=5)
    graph_page.mouse.up()
    panned = view_state(graph_page)["transform"]
    assert panned["x"] == pytest.approx(zoomed["x"] + 100)
    assert panned["y"] == pytest.approx(zoomed["y"] + 50)
    assert graph_page.evaluate("window.selections") == ["server"]
