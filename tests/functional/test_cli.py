"""kiln-manage against a real database."""

from __future__ import annotations

import json
import pathlib

from tests.functional import servers


def test_tenant_and_token_commands(tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path, None)
    assert "base" in servers.manage(env, "db", "current").stdout
    assert servers.manage(env, "db", "check", check=False).returncode == 1
    servers.manage(env, "db", "upgrade")
    servers.manage(env, "db", "check")

    tenant = json.loads(servers.manage(env, "tenant", "create", "acme", "--format", "json").stdout)
    assert tenant["name"] == "acme"
    again = servers.manage(env, "tenant", "create", "acme", check=False)
    assert again.returncode == 1
    assert "already exists" in again.stderr

    issued = json.loads(servers.manage(env, "token", "create", "--tenant", "acme", "--role",
                                       "admin", "--format", "json").stdout)
    assert issued["role"] == "admin" and len(issued["token"]) >= 40
    listed = json.loads(servers.manage(env, "token", "list", "--tenant", "acme", "--format",
                                       "json").stdout)
    assert [t["id"] for t in listed] == [issued["id"]]
    assert issued["token"] not in json.dumps(listed)
    table = servers.manage(env, "tenant", "list").stdout
    assert "acme" in table and tenant["id"] in table

    missing = servers.manage(env, "token", "create", "--tenant", "nobody", check=False)
    assert missing.returncode == 1
    assert "The Tenant (nobody) could not be found." in missing.stderr
    usage = servers.manage(env, "token", "create", "--tenant", "acme", "--role", "root",
                           check=False)
    assert usage.returncode == 2


def test_demo_env_is_stable_and_private(tmp_path: pathlib.Path) -> None:
    env = servers.kiln_environment(tmp_path, None, 18123)
    servers.manage(env, "db", "upgrade")
    first = servers.manage(env, "demo-env").stdout.strip()
    second = servers.manage(env, "demo-env").stdout.strip()
    assert first == second
    assert first.startswith("export OS_AUTH_TYPE=admin_token "
                            "OS_ENDPOINT=http://127.0.0.1:18123/v1/")
    credentials = tmp_path / "demo-credentials.json"
    assert credentials.stat().st_mode & 0o777 == 0o600
