"""The custom constraints Kiln ships (plugins/constraints), as registered."""

from __future__ import annotations

from typing import Any

import pytest

from engine.resources.registry import load_constraints

CONSTRAINTS = load_constraints()


def test_every_builtin_is_registered() -> None:
    assert sorted(CONSTRAINTS) == ["dns_domain", "dns_name", "ip_addr", "iso_8601",
                                   "mac_addr", "net_cidr", "rel_dns_name", "timezone"]


@pytest.mark.parametrize(("name", "value"), [
    ("ip_addr", "10.0.0.1"), ("ip_addr", "fe80::1"),
    ("net_cidr", "10.0.0.0/24"), ("net_cidr", "2001:db8::/32"),
    ("mac_addr", "fa:16:3e:00:00:01"), ("mac_addr", "FA-16-3E-00-00-01"),
    ("dns_name", "web-1.example.com"), ("dns_name", "example.com."),
    ("dns_domain", "example.com."), ("dns_domain", ""),
    ("rel_dns_name", "web"), ("rel_dns_name", ""),
    ("iso_8601", "2026-11-22T15:04:05Z"), ("iso_8601", "2026-11-22"),
    ("timezone", "Europe/Paris"), ("timezone", ""),
])
def test_accepted(name: str, value: Any) -> None:
    assert CONSTRAINTS[name].check(value) is None


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("ip_addr", "10.0.0.256", "Error validating value '10.0.0.256': Invalid IP address"),
    ("ip_addr", 7, "Error validating value '7': Invalid IP address"),
    ("net_cidr", "10.0.0.1/24",
     "Error validating value '10.0.0.1/24': Invalid net cidr 10.0.0.1/24 has host bits set"),
    ("net_cidr", "10.0.0.0",
     "Error validating value '10.0.0.0': Invalid net cidr '10.0.0.0': a prefix length is "
     "required"),
    ("mac_addr", "fa:16:3e:00:00", "Error validating value 'fa:16:3e:00:00': Invalid MAC "
                                   "address."),
    ("dns_name", "-web.example.com",
     "Error validating value '-web.example.com': '-web.example.com' not in valid format. "
     "Reason: Name '-web.example.com' must be 1-63 characters long, each of which can only "
     "be alphanumeric or a hyphen."),
    ("dns_domain", "example.com",
     "Error validating value 'example.com': 'example.com' must end with '.'."),
    ("rel_dns_name", "web.example.com.",
     "Error validating value 'web.example.com.': 'web.example.com.' is a FQDN. It should be "
     "a relative domain name."),
    ("iso_8601", "yesterday", "Error validating value 'yesterday'"),
    ("timezone", "Mars/Olympus",
     "Error validating value 'Mars/Olympus': Invalid timezone: 'No time zone found with key "
     "Mars/Olympus'"),
])
def test_refused(name: str, value: Any, reason: str) -> None:
    assert CONSTRAINTS[name].check(value) == reason
