"""``kiln-manage tenant …``, ``token …`` and ``demo-env``."""

from __future__ import annotations

import argparse
import datetime
import json
import os
from typing import Any

from cliff.command import Command

from engine.cli.base import KilnCommand, KilnLister, KilnShowOne, age, when
from engine.context import ADMIN_ROLE, ROLES

DEMO_TENANT = "demo"
DEMO_CREDENTIALS = "demo-credentials.json"
TENANT_FIELDS = ("id", "name", "created_at")
TOKEN_FIELDS = ("id", "tenant_id", "role", "created_at", "expires_at", "last_used_at",
                "revoked_at")


def _tenant(record: Any) -> tuple[Any, ...]:
    return (record.id, record.name, when(record.created_at))


def _token(record: Any) -> tuple[Any, ...]:
    return (record.id, record.tenant_id, record.role, when(record.created_at),
            when(record.expires_at), when(record.last_used_at), when(record.revoked_at))


def lifetime(text: str) -> datetime.timedelta:
    """A token's ``--expires-in``: an age above zero (argparse type: else exit 2)."""
    try:
        value = age(text)
    except ValueError:
        value = datetime.timedelta(0)
    if not value:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a lifetime like 30d, 12h, 90m, 45s or 2w")
    return value


class TenantCreate(KilnShowOne):
    """Create a tenant."""

    example = "kiln-manage tenant create acme"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("name")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return TENANT_FIELDS, _tenant(self.kiln.tenants.create_tenant(parsed_args.name))


class TenantList(KilnLister):
    """List tenants."""

    example = "kiln-manage tenant list -f value -c name"

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return TENANT_FIELDS, [_tenant(t) for t in self.kiln.tenants.list_tenants()]


class TenantShow(KilnShowOne):
    """Show a tenant, with how many tokens and live stacks it has."""

    example = "kiln-manage tenant show acme"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("tenant", help="name or id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        tenant = self.kiln.tenants.get_tenant(parsed_args.tenant)
        tokens = self.kiln.tenants.list_tokens(tenant.id)
        live = self.kiln.tenants.live_tokens(tenant.id)
        stacks = self.kiln.operator.count_stacks(tenant.id)
        return ((*TENANT_FIELDS, "tokens", "live_tokens", "stacks"),
                (*_tenant(tenant), len(tokens), len(live), stacks))


class TenantDelete(KilnCommand):
    """Delete a tenant, its tokens and the records of its deleted stacks.

    A tenant that still has stacks is refused: delete them through the API first."""

    example = "kiln-manage tenant delete acme"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("tenant", help="name or id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        record = self.kiln.tenants.delete_tenant(parsed_args.tenant)
        print(f"Deleted tenant {record.name} ({record.id})")
        return 0


class TokenCreate(KilnShowOne):
    """Create an API token for a tenant; the secret (``kiln_…``) is printed once.

    Only the token's hash is stored, so the secret cannot be shown again. Without
    --expires-in it authenticates until revoked."""

    example = ("kiln-manage token create --tenant acme --role member --expires-in 30d "
               "-f value -c token")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--tenant", required=True, help="tenant name or id")
        parser.add_argument("--role", choices=ROLES, default="member")
        parser.add_argument("--expires-in", type=lifetime, metavar="AGE",
                            help="stop authenticating this long from now: 45s, 90m, 12h, "
                                 "30d or 2w")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        issued = self.kiln.tenants.create_token(parsed_args.tenant, parsed_args.role,
                                                parsed_args.expires_in)
        return (*TOKEN_FIELDS, "token"), (*_token(issued.token), issued.secret)


class TokenList(KilnLister):
    """List tokens: id, tenant, role, creation, expiry, last use; never the secrets.

    Only the secrets' hashes are stored, so there is nothing else to show."""

    example = "kiln-manage token list --tenant acme"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--tenant", help="tenant name or id (default: every tenant)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return TOKEN_FIELDS, [_token(t) for t in self.kiln.tenants.list_tokens(
            parsed_args.tenant)]


class TokenRevoke(KilnShowOne):
    """Revoke a token by id: it stops authenticating at once."""

    example = "kiln-manage token revoke 5d0c7e9a-…"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("token_id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        return TOKEN_FIELDS, _token(self.kiln.tenants.revoke_token(parsed_args.token_id))


class DemoEnv(KilnCommand):
    """Print the shell line that points the openstack CLI at this Kiln (demo tenant).

    Ensures a tenant "demo" and an admin token for it, and prints the exports that
    python-heatclient and ``openstack stack …`` read.
    The secret is kept in a 0600 file under state_path because only its hash is in the
    database: it is the operator's own local credential, like an openrc file."""

    example = 'eval "$(kiln-manage demo-env)"'

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        kiln = self.kiln
        path = os.path.join(kiln.conf.state_path, DEMO_CREDENTIALS)
        tenant = (kiln.tenants.find_tenant(DEMO_TENANT)
                  or kiln.tenants.create_tenant(DEMO_TENANT))
        creds = _read(path)
        if not (creds and creds.get("tenant_id") == tenant.id
                and kiln.tenants.is_live(creds.get("token", ""))):
            issued = kiln.tenants.create_token(tenant.id, ADMIN_ROLE)
            creds = {"tenant_id": tenant.id, "token": issued.secret}
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(fd, 0o600)  # O_CREAT's mode does not narrow a file that existed
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


COMMANDS: dict[str, type[Command]] = {
    "tenant create": TenantCreate, "tenant list": TenantList, "tenant show": TenantShow,
    "tenant delete": TenantDelete, "token create": TokenCreate, "token list": TokenList,
    "token revoke": TokenRevoke, "demo-env": DemoEnv,
}
