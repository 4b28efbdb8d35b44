"""Which resources a selector picks: types, names, tags (OpenStack and AWS styles),
metadata flags, and both sides of a change."""

from __future__ import annotations

from engine.lifecycle.view import Unresolved
from plugins.lifecycle.policy.matching import (
    EVERY_RESOURCE,
    Selector,
    metadata_flags,
    resource_tags,
    selects,
)
from tests.unit.plugins.lifecycle.views import resource

DB = "OS::Trove::Instance"


def test_openstack_tags_are_whole_strings() -> None:
    db = resource("db", DB, tags=["protected", "env=prod", 3, Unresolved("get_param", ("t",))])

    assert resource_tags(db) == ("protected", "env=prod")


def test_aws_tags_give_their_key_and_key_equals_value() -> None:
    bucket = resource("b", "AWS::S3::Bucket", Tags=[
        {"Key": "protected", "Value": "yes"}, {"Key": "team"}, {"Value": "orphan"}, "odd"])

    assert resource_tags(bucket) == ("protected", "protected=yes", "team")


def test_tags_of_other_shapes_give_none() -> None:
    assert resource_tags(resource("a", DB, tags="protected")) == ()
    assert resource_tags(resource("a", DB, tags={"protected": True})) == ()
    assert resource_tags(resource("a", DB)) == ()


def test_metadata_flags_are_keys_set_to_true() -> None:
    db = resource("db", DB, metadata={"protected": True, "keep": "TRUE", "off": False,
                                      "label": "yes", "nested": {"x": True}})

    assert metadata_flags(db) == {"protected", "keep"}


def test_every_key_given_must_hold_and_any_pattern_of_a_key() -> None:
    db = resource("db", DB, tags=["protected"], metadata={"backup": True})
    selector = Selector(types=("OS::Trove::*", "OS::Cinder::*"), names=("d*",),
                        tags=("prot*",), metadata=("backup", "keep"))

    assert selects(selector, "db", [db])
    assert not selects(selector, "web", [db])
    assert not selects(Selector(types=("OS::Nova::*",), tags=("protected",)), "db", [db])
    assert not selects(Selector(tags=("env=*",)), "db", [db])
    assert not selects(Selector(metadata=("keep",)), "db", [db])
    assert selects(EVERY_RESOURCE, "db", [db])


def test_one_side_must_satisfy_the_whole_selector() -> None:
    old = resource("db", DB, tags=["protected"])
    new = resource("db", "OS::Nova::Server", tags=[])  # the update drops the tag

    assert selects(Selector(tags=("protected",)), "db", [old, new])
    assert selects(Selector(types=("OS::Nova::*",)), "db", [old, new])
    # Neither side is a Nova server tagged protected.
    assert not selects(Selector(types=("OS::Nova::*",), tags=("protected",)), "db", [old, new])


def test_a_resource_no_view_shows_is_picked_by_name_only() -> None:
    assert selects(Selector(names=("db",)), "db", [])
    assert not selects(Selector(names=("db",), types=("*",)), "db", [])


def test_a_selector_reads_as_the_resources_it_picks() -> None:
    assert str(EVERY_RESOURCE) == "resources"
    assert str(Selector(types=("OS::Trove::*", "OS::Cinder::Volume"), names=("db*",),
                        tags=("protected",), metadata=("keep",))) == (
        "resources of type OS::Trove::* or OS::Cinder::Volume named db* tagged protected "
        "with metadata flag keep")
