"""engine.errors: messages from one template per class, locations, and the category tree."""

from __future__ import annotations

import pytest

from engine import errors
from engine.errors import Location


def test_location_with_line_and_path() -> None:
    loc = Location(path="resources.b.type", line=7)

    assert str(loc) == "template:7 resources.b.type"


def test_location_names_the_file() -> None:
    assert str(Location(path="parameters.p", line=3, file="env.yaml")) == "env.yaml:3 parameters.p"


def test_location_without_line_shows_only_the_path() -> None:
    assert str(Location(path="outputs.o.value")) == "outputs.o.value"


def test_location_with_only_a_line() -> None:
    assert str(Location(line=2)) == "template:2"


def test_empty_location_is_empty() -> None:
    assert str(Location()) == ""


def test_message_is_formatted_from_the_class_template() -> None:
    exc = errors.ResourceTypeNotFound(type_name="OS::Nope")

    assert exc.message == "The Resource Type (OS::Nope) could not be found."
    assert str(exc) == exc.message
    assert exc.details == {"type_name": "OS::Nope"}
    assert exc.location is None


def test_location_prefixes_the_message() -> None:
    exc = errors.ResourceTypeNotFound(Location("resources.b.type", 7), type_name="OS::Nope")

    assert str(exc) == (
        "template:7 resources.b.type: The Resource Type (OS::Nope) could not be found."
    )
    assert exc.args == (str(exc),)


def test_an_empty_location_adds_no_prefix() -> None:
    exc = errors.StackValidationFailed(Location(), reason="bad")

    assert str(exc) == "bad"


def test_a_missing_detail_keeps_the_template_and_the_details() -> None:
    exc = errors.StackExists(name="s1")  # the template wants stack_name

    assert exc.message == "The Stack ({stack_name}) already exists. {'name': 's1'}"


def test_at_pins_a_location_and_refreshes_args() -> None:
    exc = errors.ResourceTypeNotFound(type_name="X")

    same = exc.at(Location("resources.r.type", 4))

    assert same is exc
    assert str(exc) == "template:4 resources.r.type: The Resource Type (X) could not be found."
    assert exc.args == (str(exc),)


def test_at_keeps_an_existing_finer_location() -> None:
    exc = errors.StackValidationFailed(Location("resources.r.properties.size", 9), reason="bad")

    exc.at(Location("resources.r", 8))

    assert str(exc) == "template:9 resources.r.properties.size: bad"


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (errors.EntityNotFound(entity="Stack", name="nosuch"),
         "The Stack (nosuch) could not be found."),
        (errors.ResourceNotFound(resource_name="r", stack_name="s"),
         "The Resource (r) could not be found in Stack s."),
        (errors.OutputNotFound(key="k"), "Specified output key k not found."),
        (errors.StackExists(stack_name="s"), "The Stack (s) already exists."),
        (errors.ActionInProgress(stack_name="s", action="CREATE"),
         "Stack s already has an action (CREATE) in progress."),
        (errors.UserParameterMissing(key="x"), "The Parameter (x) was not provided."),
        (errors.UnknownUserParameter(key="p"), "The Parameter (p) was not defined in template."),
        (errors.InvalidFilter(keys=["bogus"]), "Invalid filter parameters ['bogus']"),
        (errors.CircularDependency(cycle="a -> b -> a"), "Circular Dependency Found: a -> b -> a"),
        (errors.InvalidTemplateReference(name="r9", referenced_from="outputs.o"),
         'The specified reference "r9" (in outputs.o) is incorrect.'),
    ],
)
def test_heat_message_texts(exc: errors.KilnError, text: str) -> None:
    assert str(exc) == text


@pytest.mark.parametrize(
    ("cls", "category"),
    [
        (errors.EntityNotFound, errors.NotFound),
        (errors.ResourceNotFound, errors.EntityNotFound),
        (errors.OutputNotFound, errors.EntityNotFound),
        (errors.StackExists, errors.Conflict),
        (errors.ActionInProgress, errors.Conflict),
        (errors.StackValidationFailed, errors.Invalid),
        (errors.InvalidTemplateVersion, errors.StackValidationFailed),
        (errors.InvalidTemplateReference, errors.StackValidationFailed),
        (errors.CircularDependency, errors.StackValidationFailed),
        (errors.ResourceTypeNotFound, errors.StackValidationFailed),
        (errors.UserParameterMissing, errors.Invalid),
        (errors.UnknownUserParameter, errors.Invalid),
        (errors.InvalidFilter, errors.Invalid),
        (errors.BadRequest, errors.Invalid),
        (errors.RequestLimitExceeded, errors.Invalid),
        (errors.AuthenticationRequired, errors.Unauthorized),
        (errors.InvalidTenant, errors.Forbidden),
        (errors.DatabaseUnavailable, errors.Unavailable),
        (errors.SchemaBehind, errors.Unavailable),
        (errors.PluginLoadFailed, errors.StartupFailed),
    ],
)
def test_hierarchy(cls: type[errors.KilnError], category: type[errors.KilnError]) -> None:
    assert issubclass(cls, category)
    assert issubclass(cls, errors.KilnError)
