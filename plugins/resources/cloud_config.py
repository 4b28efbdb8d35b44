"""``OS::Heat::CloudConfig``: cloud-init cloud-config, rendered to YAML and stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import yaml

from engine.schema import MAP, Property
from plugins.resources.software_config import UNGROUPED, StoredConfig

# NOTE: the dumper Heat uses (the C one when PyYAML has libyaml), with PyYAML's defaults:
# block style, sorted keys, non-ASCII escaped. The text must match Heat's byte for byte,
# since cloud-init and anything comparing configs read it.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class CloudConfig(StoredConfig):
    """A configuration resource for representing cloud-init cloud-config.

    The ``cloud_config`` map is rendered as YAML after ``#cloud-config`` and stored as an
    immutable config (group ``Heat::Ungrouped``): ``get_resource`` gives the config's id,
    ``get_attr [c, config]`` the text. Any change makes a new config.
    """

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "cloud_config": Property(
            MAP,
            "Map representing the cloud-config data structure which will be formatted as "
            "YAML.",
        ),
    }

    def render_config(self) -> Any:
        return "#cloud-config\n" + yaml.dump(self.properties["cloud_config"], Dumper=_DUMPER)

    def config_group(self) -> str:
        return UNGROUPED
