"""The stack list's page sizes ([api] default_stacks_per_page, max_stacks_per_page) as
Heat's clients meet them: python-heatclient and the openstack CLI given a limit larger
than a page ask for the rest themselves (after the last, by marker) and list every stack;
without one they get the default page, which links to the next. On a kiln-all of its own
with pages of 2 (no limit) and 3 (at most)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.functional import servers
from tests.functional.conftest import heat_for, unique

NONE = "heat_template_version: 2018-08-31\nresources:\n  a: {type: OS::Heat::None}\n"
STACKS = 7


@pytest.fixture(scope="module")
def kiln(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Kiln]:
    kiln = servers.start_all(tmp_path_factory.mktemp("pages"), None,
                             OS_API__DEFAULT_STACKS_PER_PAGE="2",
                             OS_API__MAX_STACKS_PER_PAGE="3")
    yield kiln
    kiln.stop()


@pytest.fixture(scope="module")
def world(kiln: servers.Kiln) -> dict[str, Any]:
    """A tenant with more stacks than two pages hold, created in this order."""
    creds = servers.new_tenant(kiln.env, unique("pages-"))
    heat = heat_for(kiln, creds)
    names = [unique(f"s{n}-") for n in range(STACKS)]
    for name in names:
        heat.stacks.create(stack_name=name, template=NONE)
    return {"heat": heat, "creds": creds, "names": names, "kiln": kiln}


def test_heatclient_given_a_limit_past_a_page_lists_every_stack(world: dict[str, Any]
                                                                 ) -> None:
    listed = [s.stack_name for s in world["heat"].stacks.list(limit=100)]

    assert listed == world["names"][::-1]  # newest first, each once


def test_the_openstack_cli_given_a_limit_lists_every_stack(world: dict[str, Any]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="admin_token", OS_TOKEN=world["creds"].token,
               OS_ENDPOINT=world["kiln"].endpoint(world["creds"].tenant_id))

    result = servers.openstack_forked(env, "stack", "list", "--limit", "1000", "-f",
                                      "value", "-c", "Stack Name")

    assert result.stdout.split() == world["names"][::-1]


def test_without_a_limit_a_client_gets_the_default_page_and_a_link_to_the_next(
        world: dict[str, Any]) -> None:
    # python-heatclient (and `openstack stack list` without --limit) asks for the rest
    # only when it was given a limit: this is what it shows.
    assert [s.stack_name for s in world["heat"].stacks.list()] == world["names"][:-3:-1]

    seen: list[str] = []
    url = f"{world['kiln'].endpoint(world['creds'].tenant_id)}/stacks"
    while url:
        body = requests.get(url, headers={"X-Auth-Token": world["creds"].token},
                            timeout=10).json()
        assert len(body["stacks"]) <= 2
        seen += [s["stack_name"] for s in body["stacks"]]
        url = next((link["href"] for link in body.get("links", [])
                    if link["rel"] == "next"), None)
    assert seen == world["names"][::-1]


def test_a_limit_is_kept_to_the_most_a_page_holds_and_detail_is_the_first_page(
        world: dict[str, Any]) -> None:
    headers = {"X-Auth-Token": world["creds"].token}
    base = world["kiln"].endpoint(world["creds"].tenant_id)

    page = requests.get(f"{base}/stacks", params={"limit": 50, "with_count": "true"},
                        headers=headers, timeout=10).json()
    detail = requests.get(f"{base}/stacks/detail", headers=headers, timeout=10).json()

    assert [s["stack_name"] for s in page["stacks"]] == world["names"][:-4:-1]
    assert page["count"] == STACKS  # every match, not the page
    assert page["links"][0]["rel"] == "next"
    assert len(detail["stacks"]) == 2
