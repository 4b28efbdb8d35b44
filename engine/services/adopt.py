"""Adopt: a create from abandon data, taking over the resources it names.

The template, environment and parameters come from the data (request parameters win),
and each resource's physical id and private data ride with the operation to the worker,
whose ADOPT step records them instead of creating anything. A hidden parameter whose
value would be the mask the abandon data put in its place is refused: the tenant gives
it again; so is an event sink's secret, unless the request's environment names the
stack's sinks again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.db.models import OperationPayload
from engine.errors import BadRequest
from engine.template.environment import parse_environment
from engine.template.parameters import MASK
from engine.template.parse import document
from engine.template.stored_parameters import hidden_names, stored_values


def adopt_request(body: Mapping[str, Any]) -> tuple[dict[str, Any], OperationPayload]:
    """(the create body the adopt amounts to, the operation payload)."""
    data = _parse(body["adopt_stack_data"])
    template = data["template"]
    environment = data.get("environment") or {}
    if not isinstance(environment, Mapping):
        raise BadRequest(reason="Invalid adopt data: environment must be a map")
    for section in ("parameters", "parameter_defaults"):
        if not isinstance(environment.get(section) or {}, Mapping):
            raise BadRequest(reason=f"Invalid adopt data: the environment's {section} must "
                                    "be a map")
    environment = _with_sinks(environment, body)
    parameters = {**(environment.get("parameters") or {}), **(body.get("parameters") or {})}
    # The values the adopted stack would take, resolved as for any stored stack: a mask
    # from the parameters, the parameter_defaults or a template default alike.
    values = stored_values(template, parameters, environment)
    masked = sorted(name for name in hidden_names(template) if values.get(name) == MASK)
    if masked:
        # Abandon data never carries hidden values; the tenant gives them again.
        raise BadRequest(reason=f"Hidden parameters {', '.join(masked)} are masked in the "
                                f"abandon data; give their values in 'parameters'")
    create = {key: value for key, value in body.items() if key != "adopt_stack_data"}
    create.update(template=template, parameters=parameters,
                  environment={k: v for k, v in environment.items() if k != "parameters"})
    resources = data.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise BadRequest(reason="Invalid adopt data: resources must be a map")
    for name, entry in resources.items():
        if not isinstance(entry or {}, Mapping) or not isinstance(
                (entry or {}).get("resource_data") or {}, Mapping):
            raise BadRequest(reason=f"Invalid adopt data: resource {name} must be a map, "
                                    "its resource_data too")
    payload: OperationPayload = {"resources": {
        name: {"resource_id": (entry or {}).get("resource_id"),
               "resource_data": (entry or {}).get("resource_data") or {}}
        for name, entry in resources.items()}}
    return create, payload


def _with_sinks(environment: Mapping[str, Any], body: Mapping[str, Any]
                ) -> Mapping[str, Any]:
    """The abandon data's environment with the request's ``event_sinks`` in place of its
    own when the request names some (``openstack stack adopt -e``), as the request's
    parameters win. The abandon data masks each sink's secret: without sinks of the
    request's, one masked is refused, naming it, rather than adopted to sign nothing."""
    given = parse_environment(body.get("environment"))
    if "event_sinks" in given:
        return {**environment, "event_sinks": given["event_sinks"]}
    sinks = environment.get("event_sinks")
    for index, sink in enumerate(sinks if isinstance(sinks, list) else ()):
        if isinstance(sink, Mapping) and sink.get("secret") == MASK:
            raise BadRequest(reason=f"The secret of event_sinks[{index}] is masked in the "
                                    "abandon data; give the stack's event_sinks again, "
                                    "with their secrets, in the request's environment")
    return environment


def _parse(raw: Any) -> Mapping[str, Any]:
    """Abandon JSON as a string (YAML parses too), or already an object."""
    try:
        data = document(raw, "adopt_stack_data").data if isinstance(raw, str) else raw
    except Exception as exc:  # noqa: BLE001 -- any parse failure is the tenant's input
        raise BadRequest(reason=f"Invalid adopt data: {exc}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("template"), Mapping):
        raise BadRequest(reason="Invalid adopt data: it has no template")
    return data
