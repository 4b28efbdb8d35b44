"""engine.lifecycle.snapshot and view: the frozen stack a plugin sees, secrets masked."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from engine.ir.build import build_from_document, pseudo_parameters
from engine.ir.model import ResolvedStack
from engine.ir.stored import redefinition
from engine.lifecycle.snapshot import Redefined, stack_view
from engine.lifecycle.view import ResourceView, StackView, Unresolved, freeze, thaw
from engine.resources.registry import ResourceTypeRegistry
from engine.template.parameters import MASK
from engine.template.parse import document

STACK_ID = "5f0e9a1c-0000-4000-8000-000000000001"
TYPES = ResourceTypeRegistry.load()
SECRET = "s3cret-pw"

TEMPLATE: dict[str, Any] = yaml.safe_load("""\
heat_template_version: 2018-08-31
parameters:
  password: {type: string, hidden: true}
  flavor: {type: string, default: m1.small}
resources:
  db:
    type: OS::Heat::TestResource
    metadata: {role: database, ports: [5432]}
    properties:
      value:
        str_replace:
          template: "postgresql://admin:PASS@db"
          params: {PASS: {get_param: password}}
  web:
    type: OS::Heat::None
    depends_on: db
    properties:
      flavor: {get_param: flavor}
      ports: [80, {number: 443}]
      database: {get_attr: [db, output]}
      first_address: {get_attr: [db, output, 0, addr]}
      db_id: {get_resource: db}
""")


@dataclasses.dataclass(frozen=True)
class Facts:
    """A stored stack, as the worker reads it."""

    template: Any
    parameters: Any
    id: str = STACK_ID
    name: str = "teststack"
    tenant_id: str = "tenant-1"
    action: str = "CREATE"
    status: str = "IN_PROGRESS"
    status_reason: str = "Stack CREATE started"
    environment: Any = dataclasses.field(default_factory=dict)
    tags: Any = ("prod", "web")
    timeout_mins: int | None = 30
    disable_rollback: bool = True


@dataclasses.dataclass(frozen=True)
class Row:
    """A stored resource."""

    name: str
    type: str
    action: str = "CREATE"
    status: str = "COMPLETE"
    physical_id: str | None = None
    properties: Any = None
    requires: Any = ()


def build(template: Mapping[str, Any], parameters: Mapping[str, Any]) -> ResolvedStack:
    return build_from_document(document(template), parameters,
                               pseudo_parameters(STACK_ID, "teststack", "tenant-1"), TYPES.get)


def view(facts: Facts | None = None, *, stored: Mapping[str, Row] | None = None,
         with_ir: bool = True, secrets: tuple[str, ...] = (SECRET,), action: str = "CREATE",
         dry_run: bool = False) -> StackView:
    facts = facts or Facts(template=TEMPLATE, parameters={"password": SECRET})
    ir = build(facts.template, facts.parameters) if with_ir else None
    return stack_view(facts, action=action, ir=ir, stored=stored or {}, secrets=secrets,
                      dry_run=dry_run)


@dataclasses.dataclass(frozen=True)
class Member:
    """A stack of a tree, as ``stack_trees.lineage`` gives it."""

    id: str
    name: str
    parent_resource: str | None


# --- the stack as it is to be -------------------------------------------------------------


def test_a_stack_without_a_lineage_is_a_top_level_one() -> None:
    seen = view()
    assert (seen.owner_id, seen.root_stack_id, seen.nested_depth) == (None, STACK_ID, 0)
    assert seen.path == ((None, "teststack"),)
    assert (seen.parent_resource_name, seen.path_in_stack()) == (None, [(None, "teststack")])


def test_a_nested_stack_knows_its_parent_its_root_and_its_path() -> None:
    facts = Facts(template=TEMPLATE, parameters={"password": SECRET})
    seen = stack_view(facts, action="CREATE", ir=None, stored={}, secrets=(), lineage=[
        Member("root-id", "web", None), Member("group-id", "web-group-x1", "group"),
        Member(STACK_ID, "teststack", "0")])
    assert (seen.owner_id, seen.root_stack_id, seen.nested_depth) == (
        "group-id", "root-id", 2)
    assert seen.path == ((None, "web"), ("group", "web-group-x1"), ("0", "teststack"))
    assert seen.parent_resource_name == "0"


def test_stack_facts_are_carried_over() -> None:
    seen = view(action="DELETE", dry_run=True)
    assert (seen.id, seen.name, seen.stack_name, seen.tenant_id) == (
        STACK_ID, "teststack", "teststack", "tenant-1")
    assert (seen.action, seen.status, seen.status_reason) == (
        "DELETE", "CREATE_IN_PROGRESS", "Stack CREATE started")
    assert (seen.tags, seen.timeout_mins, seen.disable_rollback, seen.dry_run) == (
        ("prod", "web"), 30, True, True)


def test_resources_of_the_ir_are_resolved_where_static() -> None:
    seen = view()
    assert sorted(seen.resources) == ["db", "web"]
    web = seen.resources["web"]
    assert (web.name, web.type, web.depends_on, web.status, web.physical_resource_id) == (
        "web", "OS::Heat::None", ("db",), "", "")
    assert web.properties["flavor"] == "m1.small"
    assert web.properties["ports"] == (80, {"number": 443})
    assert seen.resources["db"].metadata == {"role": "database", "ports": (5432,)}
    assert seen.count_of("OS::Heat::None") == 1
    assert seen.count_of("OS::Nova::Server") == 0


def test_references_to_resources_not_yet_created_are_unresolved_markers() -> None:
    properties = view().resources["web"].properties
    assert properties["database"] == Unresolved("get_attr", ("db", "output"))
    assert properties["first_address"] == Unresolved("get_attr", ("db", "output", 0, "addr"))
    assert properties["db_id"] == Unresolved("get_resource", ("db",))
    assert str(properties["database"]) == "<get_attr db output: known at run time>"


def test_a_value_that_fails_to_evaluate_is_left_to_its_step() -> None:
    # Found by tests/functional/api/test_template_properties.py: the error escaped the
    # view, so every operation on the stack failed as an internal error, its delete too.
    template = {"heat_template_version": "2018-08-31", "resources": {"r": {
        "type": "OS::Heat::None",
        "properties": {"piece": {"str_split": [",", "a,b", 5]}, "kept": "x"}}}}
    properties = view(Facts(template=template, parameters={})).resources["r"].properties
    assert properties["piece"] == Unresolved("str_split", ())
    assert properties["kept"] == "x"


# --- secrets ------------------------------------------------------------------------------


def test_hidden_parameters_are_masked() -> None:
    seen = view()
    assert seen.parameters == {"password": MASK}


def test_a_secret_carried_into_a_property_is_masked() -> None:
    value = view().resources["db"].properties["value"]
    assert value == f"postgresql://admin:{MASK}@db"


def test_a_hidden_parameter_is_masked_even_without_the_secrets_list() -> None:
    assert view(secrets=()).parameters["password"] == MASK


def test_secrets_are_masked_in_template_environment_parameters_and_reason() -> None:
    template = {**TEMPLATE, "parameters": {
        "password": {"type": "string", "hidden": True, "default": SECRET},
        "flavor": {"type": "string", "default": "m1.small"}}}
    facts = Facts(template=template, parameters={"flavor": f"tiny-{SECRET}"},
                  environment={"parameters": {"password": SECRET}},
                  status_reason=f"Resource CREATE failed: bad password {SECRET}")
    seen = view(facts)
    assert seen.template["parameters"]["password"]["default"] == MASK
    assert seen.environment == {"parameters": {"password": MASK}}
    assert seen.parameters == {"flavor": f"tiny-{MASK}"}  # not hidden, but carries one
    assert seen.status_reason == f"Resource CREATE failed: bad password {MASK}"
    assert SECRET not in repr(seen)


def test_a_hidden_default_a_given_value_overrides_is_masked_by_name() -> None:
    # The stack takes the given value, so the default is in no secrets list: the name
    # masks it (engine.template.stored_parameters.masked_template).
    template = {**TEMPLATE, "parameters": {
        **TEMPLATE["parameters"],
        "password": {"type": "string", "hidden": True, "default": "default-pw"}}}
    seen = view(Facts(template=template, parameters={"password": SECRET}))

    assert seen.template["parameters"]["password"]["default"] == MASK
    assert seen.template["parameters"]["flavor"] == {"type": "string", "default": "m1.small"}
    assert "default-pw" not in repr(seen)


def test_a_hidden_entry_of_the_environment_is_masked_by_name() -> None:
    # Overridden by the given value, the parameter_defaults entry is no value the stack
    # takes, so no secrets list holds it: the name masks it.
    facts = Facts(template=TEMPLATE, parameters={"password": SECRET},
                  environment={"parameters": {"password": SECRET},
                               "parameter_defaults": {"password": "shadowed-pw",
                                                      "flavor": "m1.large"}})
    seen = view(facts)
    assert seen.environment == {"parameters": {"password": MASK},
                                "parameter_defaults": {"password": MASK,
                                                       "flavor": "m1.large"}}


def test_a_secret_in_a_stored_property_is_masked() -> None:
    stored = {"db": Row("db", "OS::Heat::TestResource", physical_id="db-1",
                        properties={"value": f"postgresql://admin:{SECRET}@db"})}
    seen = view(stored=stored)
    assert seen.resources["db"].properties == {"value": f"postgresql://admin:{MASK}@db"}
    assert SECRET not in repr(seen)


NUMBER_TEMPLATE: dict[str, Any] = yaml.safe_load("""\
heat_template_version: 2018-08-31
parameters:
  pin: {type: number, hidden: true}
resources:
  lock:
    type: OS::Heat::None
    properties:
      pin: {get_param: pin}
""")


def test_a_hidden_number_passed_into_a_property_is_masked() -> None:
    facts = Facts(template=NUMBER_TEMPLATE, parameters={"pin": "4321"})
    seen = view(facts, secrets=("4321",))  # what stack_secrets() gives for this stack
    assert seen.parameters == {"pin": MASK}
    assert seen.resources["lock"].properties["pin"] == MASK


def test_a_hidden_number_in_a_stored_property_is_masked() -> None:
    facts = Facts(template=NUMBER_TEMPLATE, parameters={"pin": "4321"})
    stored = {"lock": Row("lock", "OS::Heat::None", properties={"pin": 4321})}
    seen = view(facts, stored=stored, secrets=("4321",))
    assert seen.resources["lock"].properties["pin"] == MASK


# --- stored state -------------------------------------------------------------------------


def test_stored_rows_win_over_the_ir() -> None:
    stored = {
        "db": Row("db", "OS::Heat::TestResource", physical_id="db-1",
                  properties={"value": "stored"}, requires=[]),
        "web": Row("web", "OS::Heat::None", action="INIT", requires=["db"]),
    }
    seen = view(stored=stored)
    db, web = seen.resources["db"], seen.resources["web"]
    assert (db.status, db.physical_resource_id, db.properties) == (
        "CREATE_COMPLETE", "db-1", {"value": "stored"})
    assert db.metadata == {"role": "database", "ports": (5432,)}  # rows keep no metadata
    # Not created yet: no status, and its properties are still those of the IR.
    assert (web.status, web.physical_resource_id, web.depends_on) == ("", "", ("db",))
    assert web.properties["db_id"] == Unresolved("get_resource", ("db",))


@pytest.mark.parametrize("action, status", [
    ("CREATE", "IN_PROGRESS"), ("CREATE", "FAILED"), ("DELETE", "COMPLETE"),
    ("DELETE", "FAILED")])
def test_resource_status_is_heats_action_and_status(action: str, status: str) -> None:
    stored = {"db": Row("db", "OS::Heat::TestResource", action=action, status=status)}
    assert view(stored=stored).resources["db"].status == f"{action}_{status}"


def test_without_an_ir_the_stored_rows_are_shown_with_template_metadata() -> None:
    stored = {"db": Row("db", "Gone::Type", properties={"size": 3}, physical_id="p"),
              "web": Row("web", "OS::Heat::None", action="INIT", requires=["db"])}
    seen = view(stored=stored, with_ir=False)
    db, web = seen.resources["db"], seen.resources["web"]
    assert (db.type, db.properties, db.metadata) == (
        "Gone::Type", {"size": 3}, {"role": "database", "ports": (5432,)})
    assert (web.properties, web.metadata, web.depends_on) == ({}, {}, ("db",))


def test_a_stored_resource_no_longer_in_the_template_is_still_shown() -> None:
    stored = {"old": Row("old", "OS::Heat::None", physical_id="old-1", requires=["db"])}
    old = view(stored=stored).resources["old"]
    assert (old.type, old.status, old.metadata, old.depends_on) == (
        "OS::Heat::None", "CREATE_COMPLETE", {}, ("db",))


# --- read only ----------------------------------------------------------------------------


def test_every_part_of_the_view_is_frozen() -> None:
    seen = view(stored={"db": Row("db", "OS::Heat::TestResource",
                                  properties={"value": "v", "list": [1, [2]]})})
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.status = "CREATE_COMPLETE"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.resources["db"].type = "X"  # type: ignore[misc]
    with pytest.raises(TypeError):
        seen.parameters["password"] = "plain"  # type: ignore[index]
    with pytest.raises(TypeError):
        seen.resources["new"] = seen.resources["db"]  # type: ignore[index]
    with pytest.raises(TypeError):
        seen.resources["db"].properties["value"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        seen.template["resources"]["web"]["properties"]["flavor"] = "big"
    with pytest.raises(TypeError):
        seen.resources["db"].metadata["role"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        seen.environment["parameters"] = {}  # type: ignore[index]
    assert seen.resources["db"].properties["list"] == (1, (2,))
    assert isinstance(seen.template["resources"]["web"]["properties"]["ports"], tuple)
    assert isinstance(seen.tags, tuple)
    marker = seen.resources["web"].properties["database"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        marker.function = "get_param"


def test_a_plugin_cannot_change_the_facts_it_was_given() -> None:
    parameters = {"password": SECRET, "flavor": "m1.small"}
    facts = Facts(template=TEMPLATE, parameters=parameters)
    seen = view(facts)
    thawed = thaw(seen.template)
    thawed["resources"]["web"]["type"] = "Changed"
    assert TEMPLATE["resources"]["web"]["type"] == "OS::Heat::None"
    assert seen.template["resources"]["web"]["type"] == "OS::Heat::None"


def test_freeze_and_thaw_round_trip_plain_data() -> None:
    data = {"a": [1, {"b": [2, 3]}], "c": {"d": "e"}, "f": None}
    frozen = freeze(data)
    assert frozen == {"a": (1, {"b": (2, 3)}), "c": {"d": "e"}, "f": None}
    thawed = thaw(frozen)
    assert thawed == data
    assert isinstance(thawed["a"], list) and isinstance(thawed["c"], dict)
    thawed["a"].append(4)  # a real, mutable copy
    assert frozen["a"] == (1, {"b": (2, 3)})


def test_thaw_turns_unresolved_markers_into_text() -> None:
    properties = view().resources["web"].properties
    thawed = thaw(properties)
    assert thawed["database"] == "<get_attr db output: known at run time>"
    assert thawed["ports"] == [80, {"number": 443}]
    assert thaw(view().template) == TEMPLATE  # no secret in it: the same document


def test_a_hand_built_view_is_frozen_too() -> None:
    built = ResourceView(name="r", type="T", properties=freeze({"k": ["v"]}),
                         metadata=freeze({}), depends_on=())
    assert built.properties == {"k": ("v",)}
    with pytest.raises(TypeError):
        built.properties["k"] = "w"  # type: ignore[index]


def test_an_update_s_side_takes_its_definition_as_the_plan_does() -> None:
    @dataclasses.dataclass(frozen=True)
    class Stored(Facts):
        files: Any = None
        facade: Any = None

    stack = Stored(TEMPLATE, {"password": SECRET}, files={"old.yaml": "y"})
    target = {"template": {"resources": {}}, "parameters": {"flavor": "big"},
              "environment": None}

    redefined = Redefined.of(stack, target)

    assert (redefined.template, redefined.parameters, redefined.environment,
            redefined.files) == redefinition(target, stack.files)
    assert (redefined.id, redefined.tags, redefined.action) == (
        STACK_ID, ("prod", "web"), "CREATE")
