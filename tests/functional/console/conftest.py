"""The console's browser tests: a real headless Chromium, from the OS packages, driven by
Playwright against the session's shared kiln-all.

Playwright's Python package talks to the browser over the DevTools protocol; it never
downloads one here (``executable_path``). ``make test-install`` installs Debian's
``chromium`` when it is missing. A browser that is still missing fails every test that
needs it, loudly: the console's tests are part of ``make test`` and must never be
skipped without a word.

Every test's page is photographed at teardown, passed or failed, to
``test-artifacts/console/<test name>.png`` (ignored by git): what the test saw last.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

from tests.functional import servers
from tests.functional.conftest import heat_for, unique

CHROMIUM = pathlib.Path("/usr/bin/chromium")
ARTIFACTS = pathlib.Path(__file__).resolve().parents[3] / "test-artifacts" / "console"
#: A laptop's screen; a test that wants a phone's sets its own viewport.
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
#: How long a locator waits for its element (Playwright's default is 30 s). Generous for
#: a two-core machine running four test processes, short enough that a missing element
#: fails the test long before pytest-timeout does.
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test module (a launch costs under a second)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"the console's browser tests need Chromium at {CHROMIUM}: run "
                    "`make test-install` (it installs Debian's chromium package), or "
                    "`apt-get install chromium`", pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page in a context of its own (its own sessionStorage: signed out), photographed
    at teardown whatever the outcome. An uncaught error in the console's scripts fails
    the test: it is a bug even when the page still looks right."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    new_page = context.new_page()
    new_page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield new_page
    finally:
        try:
            if not new_page.is_closed():  # a test may close its page itself
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                new_page.screenshot(
                    path=ARTIFACTS / f"{artifact_name(request.node.name)}.png", full_page=True)
        finally:
            context.close()
    if errors:
        pytest.fail("uncaught errors in the console's scripts:\n" + "\n".join(errors),
                    pytrace=False)


def artifact_name(test_name: str) -> str:
    """A test's name as a file name (parameters keep their ids, not their brackets)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")


@pytest.fixture
def console_url(kiln_all: servers.Kiln) -> str:
    """The console of the session's shared kiln-all."""
    return kiln_all.url + "/console"


@pytest.fixture(scope="module")
def member(kiln_all: servers.Kiln) -> servers.Credentials:
    """A tenant of the module's own with a member token."""
    return servers.new_tenant(kiln_all.env, unique("console-"))


@pytest.fixture(scope="module")
def admin(kiln_all: servers.Kiln) -> servers.Credentials:
    """An operator: a tenant of its own with an admin token (admins see every tenant)."""
    return servers.new_tenant(kiln_all.env, unique("console-ops-"), role="admin")


@pytest.fixture(scope="module")
def member_heat(kiln_all: servers.Kiln, member: servers.Credentials) -> Any:
    """python-heatclient as ``member``: stacks made through the API, for the console."""
    return heat_for(kiln_all, member)
