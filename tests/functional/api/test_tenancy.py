"""Tokens are required, tenants are isolated, admins may cross tenants, secrets are hashed."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
import requests
from heatclient import exc as heat_exc

from tests.functional import servers, templates
from tests.functional.conftest import heat_for, unique


def test_missing_or_bad_token_is_401(kiln_all: servers.Kiln) -> None:
    creds = servers.new_tenant(kiln_all.env, unique("t-"))
    url = f"{kiln_all.endpoint(creds.tenant_id)}/stacks"
    for headers in ({}, {"X-Auth-Token": "not-a-token"}):
        response = requests.get(url, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "AuthenticationRequired"


def test_version_discovery_needs_no_token(kiln_all: servers.Kiln) -> None:
    response = requests.get(kiln_all.url + "/", timeout=10)
    assert response.status_code == 300
    assert response.json()["versions"][0]["id"] == "v1.0"


def test_healthcheck_needs_no_token(kiln_all: servers.Kiln) -> None:
    response = requests.get(kiln_all.url + "/healthcheck", timeout=10)
    assert (response.status_code, response.text) == (200, "OK")


def test_tenants_never_see_each_other(kiln_all: servers.Kiln) -> None:
    alice_creds = servers.new_tenant(kiln_all.env, unique("alice-"))
    bob_creds = servers.new_tenant(kiln_all.env, unique("bob-"))
    alice, bob = heat_for(kiln_all, alice_creds), heat_for(kiln_all, bob_creds)
    name = unique("private")
    stack_id = alice.stacks.create(stack_name=name, template=templates.FAILING)["stack"]["id"]

    assert [s.id for s in bob.stacks.list()] == []
    for ref in (name, stack_id):
        with pytest.raises(heat_exc.HTTPNotFound):
            bob.stacks.get(ref)
    # Bob's token on Alice's URL is refused outright.
    url = f"{kiln_all.endpoint(alice_creds.tenant_id)}/stacks"
    response = requests.get(url, headers={"X-Auth-Token": bob_creds.token}, timeout=10)
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "InvalidTenant"
    # The same name is free in Bob's tenant.
    bob.stacks.create(stack_name=name, template=templates.FAILING)


def test_admin_token_acts_on_the_tenant_in_the_url(kiln_all: servers.Kiln) -> None:
    owner = servers.new_tenant(kiln_all.env, unique("owner-"))
    admin = servers.new_tenant(kiln_all.env, unique("ops-"), role="admin")
    name = unique("s")
    heat_for(kiln_all, owner).stacks.create(stack_name=name, template=templates.FAILING)
    as_admin = heat_for(kiln_all, servers.Credentials(owner.tenant_id, admin.token))
    listed = list(as_admin.stacks.list())
    assert [s.stack_name for s in listed] == [name]
    assert listed[0].project == owner.tenant_id


def test_admin_naming_a_tenant_that_does_not_exist_gets_404(kiln_all: servers.Kiln) -> None:
    admin = servers.new_tenant(kiln_all.env, unique("ops-"), role="admin")
    url = f"{kiln_all.endpoint('no-such-tenant')}/stacks"
    response = requests.post(url, headers={"X-Auth-Token": admin.token}, timeout=10,
                             json={"stack_name": "s", "template": templates.FAILING})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == (
        "The Tenant (no-such-tenant) could not be found.")


def test_tokens_are_stored_hashed(kiln_all: servers.Kiln) -> None:
    creds = servers.new_tenant(kiln_all.env, unique("hash-"))
    database = kiln_all.env["OS_DEFAULT__STATE_PATH"] + "/kiln.sqlite"
    with sqlite3.connect(database) as conn:
        stored = [row[0] for row in conn.execute("SELECT token_hash FROM tokens")]
        dump = "\n".join(conn.iterdump())
    assert hashlib.sha256(creds.token.encode()).hexdigest() in stored
    assert creds.token not in dump
