"""The parameters a stored template declares, whatever its format, the values a stored
stack gives them, and what they hide.

A stored stack's template was checked when it was stored. Code that must mask its hidden
parameters without building the IR (the template and environment reads, the template's
rendering, abandon and export, adopt, the plugins' stack view, the worker's log masking, a
stack whose resource type was uninstalled since) reads them here: HOT's ``parameters``
with ``hidden``, CFN's ``Parameters`` with ``NoEcho``, each by the parser its format's
loader uses, so no format's secrets are missed.
A parameter's value is resolved as the IR resolves it (``parameters.raw_values``): the
stack's parameters, else its environment's ``parameter_defaults``, else the template's
default, so a hidden value is a secret whichever of them gave it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import KilnError
from engine.template import event_sinks
from engine.template.cfn_parameters import parameter_schema as cfn_parameter_schema
from engine.template.environment import Environment
from engine.template.parameters import (
    MASK,
    ParameterSchema,
    given_hidden_values,
    parse_schema,
    raw_values,
)
from engine.template.parse import SourceDocument
from engine.template.versions import is_cfn


def schemas(template: Any) -> dict[str, ParameterSchema]:
    """The declared parameters of a stored template, HOT or CFN.

    Each is read alone: one that no longer reads (a pattern over a budget lowered since)
    stands as a hidden string with its default, so that what it may hide is masked
    rather than shown."""
    data = template if isinstance(template, Mapping) else {}
    cfn_format = is_cfn(data)
    section = data.get("Parameters" if cfn_format else "parameters")
    if not isinstance(section, Mapping):
        return {}
    # Without the whole-document walk of ``parse.document``: it was checked when stored.
    doc = SourceDocument(data=data)
    parse = cfn_parameter_schema if cfn_format else parse_schema
    found: dict[str, ParameterSchema] = {}
    for name, body in section.items():
        try:
            found[str(name)] = parse(doc, str(name), body)
        except KilnError:
            default = (body.get("Default" if cfn_format else "default")
                       if isinstance(body, Mapping) else None)
            found[str(name)] = ParameterSchema(name=str(name), type="string", default=default,
                                               has_default=default is not None, hidden=True)
    return found


def hidden_names(template: Any) -> set[str]:
    """Names of the hidden (HOT) or NoEcho (CFN) parameters of a stored template."""
    return {name for name, schema in schemas(template).items() if schema.hidden}


def stored_values(template: Any, parameters: Mapping[str, Any] | None,
                  environment: Mapping[str, Any] | None) -> dict[str, Any]:
    """The value each declared parameter of a stored stack takes, as stored (not
    converted): its ``parameters``, else its ``environment``'s parameter_defaults, else
    the template's default (``parameters.raw_values``, the IR's order)."""
    return raw_values(schemas(template), parameters or {}, _defaults(environment))


def stored_hidden_values(template: Any, parameters: Mapping[str, Any] | None,
                         environment: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``parameters.hidden_values`` of a stored stack, its values resolved as
    :func:`stored_values` resolves them: unlike the IR this needs no resource type, so
    it works when a type has been uninstalled."""
    return given_hidden_values(schemas(template), parameters or {}, _defaults(environment))


def masked_template(template: Any) -> Any:
    """``template`` with the ``default`` (CFN: ``Default``) of each hidden parameter masked,
    by name: a default another source overrides is no value the stack takes, so masking
    by value would leave it in clear. The one rule for every view of a stored template
    (its read, its rendering, abandon and export, the plugins' stack view). A null default
    stays null: there is nothing to hide, and a mask would be a value adopt refuses.
    ``template`` itself is not changed."""
    if not isinstance(template, Mapping):
        return template
    hidden = hidden_names(template)
    cfn_format = is_cfn(template)
    key, default = ("Parameters", "Default") if cfn_format else ("parameters", "default")
    section = template.get(key)
    if not hidden or not isinstance(section, Mapping):
        return template
    return {**template, key: {
        name: {**body, default: MASK}
        if str(name) in hidden and isinstance(body, Mapping) and body.get(default) is not None
        else body
        for name, body in section.items()}}


def masked_environment(template: Any, environment: Mapping[str, Any]) -> dict[str, Any]:
    """``environment`` with the hidden parameters' entries of its ``parameters`` and
    ``parameter_defaults`` masked, by name: an entry another source overrides is no
    value the stack takes, so no other masking would find it; and its event sinks'
    secrets."""
    hidden = hidden_names(template)
    shown = dict(environment)
    if "event_sinks" in shown:
        shown["event_sinks"] = event_sinks.masked(shown["event_sinks"])
    for section in ("parameters", "parameter_defaults"):
        entries = shown.get(section)
        if isinstance(entries, Mapping):
            shown[section] = {k: MASK if k in hidden else v for k, v in entries.items()}
    return shown


def _defaults(environment: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return Environment.from_dict(environment).parameter_defaults
