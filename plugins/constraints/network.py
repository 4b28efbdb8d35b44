"""Custom constraints on network values: ``ip_addr``, ``net_cidr``, ``mac_addr``."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from engine.schema import CustomCheck

_MAC = re.compile(r"^([0-9a-f]{2}([:-]))([0-9a-f]{2}\2){4}[0-9a-f]{2}$", re.IGNORECASE)


class IPAddress(CustomCheck):
    """An IPv4 or IPv6 address."""

    def check(self, value: Any) -> str | None:
        try:
            ipaddress.ip_address(value if isinstance(value, str) else "")
        except ValueError:
            return self.refused(value, "Invalid IP address")
        return None


class NetworkCIDR(CustomCheck):
    """A network in CIDR notation whose host bits are zero (``10.0.0.0/24``)."""

    def check(self, value: Any) -> str | None:
        if not isinstance(value, str) or "/" not in value:
            return self.refused(value, f"Invalid net cidr '{value}': a prefix length is "
                                       "required")
        try:
            ipaddress.ip_network(value)
        except ValueError as exc:
            return self.refused(value, f"Invalid net cidr {exc}")
        return None


class MACAddress(CustomCheck):
    """A MAC address written with ``:`` or ``-``."""

    def check(self, value: Any) -> str | None:
        if isinstance(value, str) and _MAC.match(value):
            return None
        return self.refused(value, "Invalid MAC address.")
