"""engine.errors: messages from one template per class, locations, and the category tree."""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap

import pytest

import engine
import plugins
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
        (errors.OutputNotFound, errors.NotFound),
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


# --- the tree drawn in engine/errors.py's docstring -----------------------------------

# A branch of the drawing: the bars and spaces before it give its depth (four characters
# a level), the first word after "── " is the class's name.
_BRANCH = re.compile(r"^(?P<indent>(?:│   |    )*)[├└]── (?P<name>\w+)(?P<note>.*)$")


def _drawn_tree() -> list[tuple[str, str, str]]:
    """(class name, its parent's name, the rest of its line) for every branch of the
    tree in ``engine.errors``' docstring; continuation lines are skipped."""
    block = (errors.__doc__ or "").split("::\n\n", 1)[1].split("\n\n", 1)[0]
    lines = textwrap.dedent(block).splitlines()
    assert lines[0] == "KilnError", "the tree starts at KilnError"
    path = ["KilnError"]
    drawn = []
    for line in lines[1:]:
        match = _BRANCH.match(line)
        if match is None:
            continue  # a note carried over from the line above
        depth = len(match["indent"]) // 4 + 1
        path[depth:] = [match["name"]]
        drawn.append((match["name"], path[depth - 1], match["note"]))
    return drawn


def _kiln_errors() -> list[type[errors.KilnError]]:
    """Every ``KilnError`` subclass Kiln and its plugins define, wherever it lives."""
    for package in (engine, plugins):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
    found, todo = [], [errors.KilnError]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.split(".")[0] in ("engine", "plugins"):
                found.append(sub)
    return found


def test_the_docstring_tree_draws_every_error_under_its_base() -> None:
    drawn = {(name, parent) for name, parent, _ in _drawn_tree()}
    defined = {(cls.__name__, cls.__bases__[0].__name__) for cls in _kiln_errors()}

    assert defined - drawn == set(), "errors missing from the tree (name, base)"
    assert drawn - defined == set(), "tree branches that are no class (name, base)"


def test_the_tree_names_the_module_of_an_error_defined_elsewhere() -> None:
    notes = {(name, parent): note for name, parent, note in _drawn_tree()}

    for cls in _kiln_errors():
        if cls.__module__ != errors.__name__:
            note = notes.get((cls.__name__, cls.__bases__[0].__name__), "")
            assert cls.__module__ in note, f"{cls.__name__}'s line names {cls.__module__}"
