"""engine.template.versions: HOT versions, their aliases and function sets."""

from __future__ import annotations

import pytest

from engine.template.functions import IMPLEMENTED
from engine.template.versions import HOT_VERSIONS, find_hot_version, known_hot_names


def test_find_by_date_and_by_alias() -> None:
    by_date = find_hot_version("2018-08-31")

    assert by_date is not None
    assert by_date.alias == "rocky"
    assert find_hot_version("rocky") is by_date
    assert by_date.full_name == "heat_template_version.2018-08-31"


@pytest.mark.parametrize("value", ["2099-01-01", "2018", 2018, None, "Rocky"])
def test_unknown_versions(value: object) -> None:
    assert find_hot_version(value) is None


def test_known_names_are_dates_then_aliases() -> None:
    assert known_hot_names() == (
        "2013-05-23, 2014-10-16, 2015-04-30, 2015-10-15, 2016-04-08, 2016-10-14, "
        "2017-02-24, 2017-09-01, 2018-03-02, 2018-08-31, 2021-04-16, "
        "newton, ocata, pike, queens, rocky, wallaby"
    )


def test_function_sets_follow_heat() -> None:
    v = {version.date: version for version in HOT_VERSIONS}

    assert "Ref" in v["2013-05-23"].functions
    assert "Ref" not in v["2014-10-16"].functions
    assert "repeat" not in v["2014-10-16"].functions
    assert "repeat" in v["2015-04-30"].functions
    assert "Fn::Select" in v["2015-04-30"].functions
    assert "Fn::Select" not in v["2015-10-15"].functions
    assert "if" in v["2016-10-14"].functions
    assert "make_url" in v["2017-09-01"].functions


def test_conditions_arrive_with_newton() -> None:
    v = {version.date: version for version in HOT_VERSIONS}

    assert not v["2016-04-08"].has_conditions
    assert v["2016-10-14"].has_conditions
    assert "contains" not in v["2017-02-24"].condition_functions
    assert "contains" in v["2017-09-01"].condition_functions


def test_every_hot_function_of_every_version_is_implemented() -> None:
    for version in HOT_VERSIONS:
        hot_names = {n for n in version.functions | version.condition_functions
                     if "::" not in n and n != "Ref"}
        assert hot_names <= IMPLEMENTED, version.date
