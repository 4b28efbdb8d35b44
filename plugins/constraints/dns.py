"""Custom constraints on DNS names: ``dns_name``, ``dns_domain``, ``rel_dns_name``."""

from __future__ import annotations

import re
from typing import Any

from engine.schema import CustomCheck

FQDN_MAX_LEN = 255
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$", re.IGNORECASE)


def dns_format_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS name, or None (RFC 1123 labels, 255 characters)."""
    if len(value) > FQDN_MAX_LEN:
        return f"'{value}' exceeds the {FQDN_MAX_LEN} character FQDN limit"
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    for label in labels:
        if not _LABEL.match(label):
            return ("Encountered an empty component." if not label else
                    f"Name '{value}' must be 1-63 characters long, each of which can only "
                    "be alphanumeric or a hyphen.")
    if len(labels) > 1 and labels[-1].isdigit():
        return f"TLD '{labels[-1]}' must not be all numeric"
    return None


class DNSName(CustomCheck):
    """A host or domain name."""

    def check(self, value: Any) -> str | None:
        if not isinstance(value, str):
            return self.refused(value, "a DNS name must be a string")
        problem = dns_format_problem(value)
        if problem:
            return self.refused(value, f"'{value}' not in valid format. Reason: {problem}")
        return None


class DNSDomain(DNSName):
    """A fully qualified domain name, ending with a dot (empty is allowed)."""

    def check(self, value: Any) -> str | None:
        if not value:
            return None
        problem = super().check(value)
        if problem:
            return problem
        if not str(value).endswith("."):
            return self.refused(value, f"'{value}' must end with '.'.")
        return None


class RelativeDNSName(DNSName):
    """A name relative to a domain: no trailing dot, room left for a domain (empty is
    allowed)."""

    def check(self, value: Any) -> str | None:
        if not value:
            return None
        if str(value).endswith("."):
            return self.refused(value, f"'{value}' is a FQDN. It should be a relative "
                                       "domain name.")
        if len(str(value)) > FQDN_MAX_LEN - 3:
            return self.refused(value, f"'{value}' contains '{len(str(value))}' characters. "
                                       "Adding a domain name will cause it to exceed the "
                                       f"maximum length of a FQDN of '{FQDN_MAX_LEN}'.")
        return super().check(value)
