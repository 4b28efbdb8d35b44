"""A stored template rendered as YAML text, with the line of every entry of its
resources, parameters and outputs sections in that text.

Kiln keeps the parsed template, not the tenant's own text, so the text is Kiln's rendering
of it, in the template's own order. The lines are found by parsing that text again
(``parse.parse_text``, the one reader that knows lines), so they are the text's by
construction. Hidden parameters' defaults (NoEcho in CFN) are masked before rendering,
the parameters being the template's own as ``stored_parameters`` reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from engine.template.parameters import MASK
from engine.template.parse import parse_text
from engine.template.stored_parameters import hidden_names
from engine.template.versions import is_cfn

# HOT's section names, and CFN's spelling of each.
SECTIONS = {"resources": "Resources", "parameters": "Parameters", "outputs": "Outputs"}
# NOTE: libyaml's emitter when PyYAML was built with it, as the parser (parse._BaseLoader).
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Wide enough that most property values stay on their key's line.
WIDTH = 100


@dataclasses.dataclass(frozen=True)
class RenderedTemplate:
    text: str
    #: section (HOT's name, whatever the format) -> entry name -> 1-based line in ``text``
    lines: Mapping[str, Mapping[str, int]]


def render(template: Any) -> RenderedTemplate:
    """``template`` as YAML text; the defaults of its hidden parameters masked."""
    data = dict(template) if isinstance(template, Mapping) else {}
    cfn = is_cfn(data)
    hidden = hidden_names(data)
    names = {section: SECTIONS[section] if cfn else section for section in SECTIONS}
    default = "Default" if cfn else "default"
    parameters = data.get(names["parameters"])
    if isinstance(parameters, Mapping) and hidden:
        data[names["parameters"]] = {
            name: {**body, default: MASK}
            if name in hidden and isinstance(body, Mapping) and default in body else body
            for name, body in parameters.items()}
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=WIDTH) if data else ""
    found = parse_text(text).lines if text else {}
    lines: dict[str, dict[str, int]] = {}
    for section, key in names.items():
        entries = data.get(key)
        lines[section] = {str(name): found[(key, str(name))] for name in entries} \
            if isinstance(entries, Mapping) else {}
    return RenderedTemplate(text=text, lines=lines)
