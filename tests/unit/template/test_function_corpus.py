"""Every HOT function, version by version, against the table in corpus/functions.yaml."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import pytest
import yaml

from engine.errors import StackValidationFailed
from engine.resources.base import select_attribute
from engine.template.functions import Deferred, ParseContext, parse_value, resolve
from engine.template.parse import from_data
from engine.template.versions import CFN_VERSIONS, HotVersion, find_hot_version

CASES = yaml.safe_load((pathlib.Path(__file__).parent / "corpus" / "functions.yaml")
                       .read_text())


class CorpusScope:
    def __init__(self, case: dict[str, Any]) -> None:
        self._params = case.get("params") or {}
        self._ids = case.get("ids") or {}
        self._attrs: dict[str, dict[str, Any]] = {}
        for key, value in (case.get("attrs") or {}).items():
            resource, attribute = key.split(".", 1)
            self._attrs.setdefault(resource, {})[attribute] = value

    def param(self, name: str) -> Any:
        return self._params[name]

    def reference_id(self, resource: str) -> Any:
        if resource not in self._ids:
            raise Deferred(resource)
        return self._ids[resource]

    def attribute(self, resource: str, attribute: str, path: Sequence[Any] = ()) -> Any:
        return select_attribute(self._attrs[resource][attribute], path)

    def attributes(self, resource: str) -> Any:
        return self._attrs[resource]


def version_of(name: str) -> HotVersion:
    """A HOT version by date or alias; ``aws`` and ``heat-cfn`` are the CFN formats."""
    cfn = {"aws": CFN_VERSIONS[0], "heat-cfn": CFN_VERSIONS[1]}
    version = cfn.get(name) or find_hot_version(name)
    assert version is not None
    return version


def evaluate(case: dict[str, Any]) -> Any:
    ctx = ParseContext(from_data({"value": case["value"]}),
                       version_of(str(case.get("version", "rocky"))), case.get("files") or {},
                       resource_names=frozenset(case.get("ids") or {}),
                       mappings=case.get("mappings") or {})
    return resolve(parse_value(ctx, case["value"], ("value",)), CorpusScope(case))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_function(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(StackValidationFailed) as caught:
            evaluate(case)
        assert caught.value.message == case["error"]
        assert caught.value.location is not None
        assert caught.value.location.path.startswith("value")
    else:
        assert evaluate(case) == case["result"]


def test_every_case_says_what_it_expects() -> None:
    for case in CASES:
        assert ("result" in case) != ("error" in case), case["name"]
