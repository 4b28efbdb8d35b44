"""engine.services.adopt: the create an adopt amounts to, refused while a hidden
parameter's value would be the mask the abandon data put in its place, wherever the mask
sits (the parameters, the parameter_defaults or the template's default)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import BadRequest
from engine.services.adopt import adopt_request
from engine.template.parameters import MASK

REFUSED = "Hidden parameters {} are masked in the abandon data; give their values in 'parameters'"


def abandoned(environment: dict[str, Any], default: Any = None) -> dict[str, Any]:
    pw: dict[str, Any] = {"type": "string", "hidden": True}
    if default is not None:
        pw["default"] = default
    return {"template": {"heat_template_version": "2018-08-31",
                         "parameters": {"pw": pw, "user": {"type": "string",
                                                           "default": MASK}}},
            "environment": environment, "resources": {}}


@pytest.mark.parametrize("data", [
    abandoned({"parameters": {"pw": MASK}}),
    abandoned({"parameter_defaults": {"pw": MASK}}),
    abandoned({"parameters": {"pw": None}, "parameter_defaults": {"pw": MASK}}),
    abandoned({}, default=MASK),
], ids=["parameters", "parameter_defaults", "null-parameter", "template-default"])
def test_a_masked_hidden_value_from_any_source_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(BadRequest) as caught:
        adopt_request({"adopt_stack_data": json.dumps(data)})

    assert caught.value.message == REFUSED.format("pw")


def test_a_hidden_value_given_again_wins_over_the_masked_default() -> None:
    data = abandoned({"parameter_defaults": {"pw": MASK, "user": "bob"}})

    create, payload = adopt_request({"adopt_stack_data": json.dumps(data),
                                     "parameters": {"pw": "again"}})

    # The masked entry stays where the data put it: the given value overrides it.
    assert create["parameters"] == {"pw": "again"}
    assert create["environment"] == {"parameter_defaults": {"pw": MASK, "user": "bob"}}
    assert payload == {"resources": {}}


def test_a_mask_in_a_parameter_that_is_not_hidden_is_its_value() -> None:
    # ``user`` defaults to the mask's text: not hidden, so never masked, so taken as is.
    create, _ = adopt_request({"adopt_stack_data": abandoned(
        {"parameters": {"pw": "given"}})})

    assert create["parameters"] == {"pw": "given"}


def test_a_masked_noecho_default_of_a_cfn_template_is_refused_too() -> None:
    # The template default abandon masks by name (stored_parameters.masked_template), in
    # either format: the value the adopted stack would take is the mask.
    data = {"template": {"AWSTemplateFormatVersion": "2010-09-09",
                         "Parameters": {"Key": {"Type": "String", "NoEcho": "true",
                                                "Default": MASK}},
                         "Resources": {}},
            "environment": {}, "resources": {}}

    with pytest.raises(BadRequest) as caught:
        adopt_request({"adopt_stack_data": json.dumps(data)})
    create, _ = adopt_request({"adopt_stack_data": json.dumps(data),
                               "parameters": {"Key": "again"}})

    assert caught.value.message == REFUSED.format("Key")
    assert create["parameters"] == {"Key": "again"}


def test_an_event_sinks_masked_secret_is_refused_unless_the_request_names_the_sinks() -> None:
    """Abandon data masks each sink's secret; the tenant names the stack's sinks again
    in the request's environment (``openstack stack adopt -e``), which replace the
    data's, as the request's parameters win."""
    hook = {"type": "webhook", "target": "https://hooks.example.com/", "secret": MASK}
    data = json.dumps(abandoned({"parameters": {"pw": "x"},
                                 "event_sinks": [{**hook, "secret": "kept"}, hook]}))

    with pytest.raises(BadRequest) as caught:
        adopt_request({"adopt_stack_data": data})
    assert caught.value.message == (
        "The secret of event_sinks[1] is masked in the abandon data; give the stack's "
        "event_sinks again, with their secrets, in the request's environment")

    again = [{**hook, "secret": "given-again"}]
    create, _ = adopt_request({"adopt_stack_data": data,
                               "environment": {"event_sinks": again}})
    assert create["environment"]["event_sinks"] == again
