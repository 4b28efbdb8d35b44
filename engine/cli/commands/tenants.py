"""``kiln-manage tenant …``, ``token …`` and ``demo-env``."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from engine.cli.output import emit
from engine.context import ADMIN_ROLE, ROLES

DEMO_TENANT = "demo"
DEMO_CREDENTIALS = "demo-credentials.json"


def register(nouns: Any) -> None:
    tenant = nouns.add_parser("tenant", help="tenants").add_subparsers(dest="verb", required=True)
    create = tenant.add_parser("create", help="create a tenant")
    create.add_argument("name")
    _format(create)
    create.set_defaults(handler=_tenant_create)
    listing = tenant.add_parser("list", help="list tenants")
    _format(listing)
    listing.set_defaults(handler=_tenant_list)

    token = nouns.add_parser("token", help="API tokens").add_subparsers(dest="verb", required=True)
    issue = token.add_parser("create", help="create a token; it is printed once")
    issue.add_argument("--tenant", required=True, help="tenant name or id")
    issue.add_argument("--role", choices=ROLES, default="member")
    _format(issue)
    issue.set_defaults(handler=_token_create)
    tokens = token.add_parser("list", help="list a tenant's tokens (never the secrets)")
    tokens.add_argument("--tenant", required=True)
    _format(tokens)
    tokens.set_defaults(handler=_token_list)

    demo = nouns.add_parser("demo-env", help="ensure a demo tenant and admin token; print the "
                                             "shell line that points clients at Kiln")
    demo.set_defaults(handler=_demo_env)


def _format(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--format", choices=("table", "json"), default="table")


def _tenant_create(kiln: Any, args: argparse.Namespace) -> int:
    record = kiln.tenants.create_tenant(args.name)
    emit([{"id": record.id, "name": record.name, "created_at": record.created_at}],
         args.format, single=True)
    return 0


def _tenant_list(kiln: Any, args: argparse.Namespace) -> int:
    emit([{"id": t.id, "name": t.name, "created_at": t.created_at}
          for t in kiln.tenants.list_tenants()], args.format)
    return 0


def _token_create(kiln: Any, args: argparse.Namespace) -> int:
    issued = kiln.tenants.create_token(args.tenant, args.role)
    emit([{"id": issued.token.id, "tenant_id": issued.token.tenant_id,
           "role": issued.token.role, "token": issued.secret}], args.format, single=True)
    return 0


def _token_list(kiln: Any, args: argparse.Namespace) -> int:
    emit([{"id": t.id, "role": t.role, "created_at": t.created_at,
           "last_used_at": t.last_used_at, "revoked_at": t.revoked_at}
          for t in kiln.tenants.list_tokens(args.tenant)], args.format)
    return 0


def _demo_env(kiln: Any, args: argparse.Namespace) -> int:
    """Reuse the stored demo credentials while they work; otherwise make new ones.

    The secret is kept in a 0600 file under state_path because only its hash is in the
    database: it is the operator's own local credential, like an openrc file.
    """
    path = os.path.join(kiln.conf.state_path, DEMO_CREDENTIALS)
    tenant = kiln.tenants.find_tenant(DEMO_TENANT) or kiln.tenants.create_tenant(DEMO_TENANT)
    creds = _read(path)
    if not (creds and creds.get("tenant_id") == tenant.id
            and kiln.tenants.is_live(creds.get("token", ""))):
        issued = kiln.tenants.create_token(tenant.id, ADMIN_ROLE)
        creds = {"tenant_id": tenant.id, "token": issued.secret}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # O_CREAT's mode does not narrow a file that already existed
        with os.fdopen(fd, "w") as handle:
            json.dump(creds, handle)
    print(f"export OS_AUTH_TYPE=admin_token "
          f"OS_ENDPOINT={kiln.api_url}/v1/{creds['tenant_id']} OS_TOKEN={creds['token']}")
    return 0


def _read(path: str) -> dict[str, str] | None:
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
