"""Template format versions Kiln knows and the intrinsic functions each one exposes.

The function sets are Heat's, version by version (HEAT-API.md 9.2), so that a function is
recognised exactly where Heat recognises it. Which of them Kiln evaluates is
``engine.template.functions.IMPLEMENTED``; a template that uses a known but unimplemented
function gets a clear 400 instead of having the call silently treated as data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

HOT_KEY = "heat_template_version"
CFN_KEYS = ("AWSTemplateFormatVersion", "HeatTemplateFormatVersion")

_BASE = frozenset({"get_attr", "get_file", "get_param", "get_resource", "list_join",
                   "resource_facade", "str_replace"})
_CFN_2013 = frozenset({"Ref", "Fn::Base64", "Fn::GetAZs", "Fn::Join", "Fn::MemberListToMap",
                       "Fn::Replace", "Fn::ResourceFacade", "Fn::Select", "Fn::Split"})
_2014 = _BASE | {"Fn::Select"}
_2015_04 = _2014 | {"repeat", "digest"}
_2015_10 = (_2015_04 - {"Fn::Select"}) | {"str_split"}
_2016_04 = _2015_10 | {"map_merge"}
_2016_10 = _2016_04 | {"yaql", "map_replace", "if"}
_2017_02 = _2016_10 | {"filter", "str_replace_strict"}
_2017_09 = _2017_02 | {"make_url", "list_concat", "list_concat_unique", "contains",
                       "str_replace_vstrict"}

_REMOVED_2014 = _CFN_2013 - {"Fn::Select"}
_REMOVED_2015 = _CFN_2013

_COND_2016 = frozenset({"equals", "not", "and", "or", "get_param"})
_COND_2017 = _COND_2016 | {"yaql", "contains"}


@dataclasses.dataclass(frozen=True)
class HotVersion:
    """One template format version (HOT, or one of the two CFN ones) and its functions."""

    date: str
    alias: str | None
    functions: frozenset[str]
    condition_functions: frozenset[str]
    # CFN functions an earlier version had: still calls, refused with Heat's message.
    removed: frozenset[str] = frozenset()
    key: str = HOT_KEY

    @property
    def has_conditions(self) -> bool:
        return bool(self.condition_functions)

    def since(self, date: str) -> bool:
        """Whether this version is ``date`` or newer (behaviour that changed then)."""
        return self.date >= date

    @property
    def full_name(self) -> str:
        return f"{self.key}.{self.date}"

    @property
    def is_cfn(self) -> bool:
        return self.key != HOT_KEY


HOT_VERSIONS: tuple[HotVersion, ...] = (
    HotVersion("2013-05-23", None, _BASE | _CFN_2013, frozenset()),
    HotVersion("2014-10-16", None, _2014, frozenset(), _REMOVED_2014),
    HotVersion("2015-04-30", None, _2015_04, frozenset(), _REMOVED_2014),
    HotVersion("2015-10-15", None, _2015_10, frozenset(), _REMOVED_2015),
    HotVersion("2016-04-08", None, _2016_04, frozenset(), _REMOVED_2015),
    HotVersion("2016-10-14", "newton", _2016_10, _COND_2016, _REMOVED_2015),
    HotVersion("2017-02-24", "ocata", _2017_02, _COND_2016, _REMOVED_2015),
    HotVersion("2017-09-01", "pike", _2017_09, _COND_2017, _REMOVED_2015),
    HotVersion("2018-03-02", "queens", _2017_09, _COND_2017, _REMOVED_2015),
    HotVersion("2018-08-31", "rocky", _2017_09, _COND_2017, _REMOVED_2015),
    HotVersion("2021-04-16", "wallaby", _2017_09, _COND_2017, _REMOVED_2015),
)


def find_hot_version(value: object) -> HotVersion | None:
    text = str(value)
    for version in HOT_VERSIONS:
        if text in (version.date, version.alias):
            return version
    return None


def known_hot_names() -> str:
    dates = [v.date for v in HOT_VERSIONS]
    aliases = [v.alias for v in HOT_VERSIONS if v.alias]
    return ", ".join(dates + aliases)


_CFN_FUNCTIONS = frozenset({"Fn::FindInMap", "Fn::GetAZs", "Ref", "Fn::GetAtt", "Fn::Select",
                            "Fn::Join", "Fn::Split", "Fn::Replace", "Fn::Base64",
                            "Fn::MemberListToMap", "Fn::ResourceFacade"})
_CFN_CONDITIONS = frozenset({"Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Ref",
                             "Fn::FindInMap"})

# Heat's two CFN formats: the AWS one has Conditions and Fn::If, the Heat one has neither.
CFN_VERSIONS: tuple[HotVersion, ...] = (
    HotVersion("2010-09-09", None, _CFN_FUNCTIONS | {"Fn::If"}, _CFN_CONDITIONS,
               key="AWSTemplateFormatVersion"),
    HotVersion("2012-12-12", None, _CFN_FUNCTIONS, frozenset(),
               key="HeatTemplateFormatVersion"),
)


def find_cfn_version(key: str, value: object) -> HotVersion | None:
    for version in CFN_VERSIONS:
        if version.key == key and str(value) == version.date:
            return version
    return None


def is_cfn(template: Mapping[str, Any]) -> bool:
    """Whether a template already checked by ``engine.template.loader.load`` (a stored one)
    is in one of the CFN formats: it names a CFN version key, as the loader refuses a
    template naming two formats. Code reading a stored template's sections asks here,
    not with its own test of the keys."""
    return any(key in template for key in CFN_KEYS)
