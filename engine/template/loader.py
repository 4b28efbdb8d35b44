"""Which format a template is in, and the loader for it.

The version key decides: ``heat_template_version`` is HOT, ``AWSTemplateFormatVersion``
and ``HeatTemplateFormatVersion`` are Heat's two CFN formats. Only keys with a string
value count, as in Heat; two of them is ambiguous.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from engine.errors import (
    AmbiguousTemplateVersion,
    InvalidTemplateVersion,
    StackValidationFailed,
)
from engine.template import cfn, hot
from engine.template.model import Template
from engine.template.parse import SourceDocument
from engine.template.versions import (
    CFN_KEYS,
    CFN_VERSIONS,
    HOT_KEY,
    HotVersion,
    find_cfn_version,
    find_hot_version,
    known_hot_names,
)

MAX_NAME_CHARS = 255


def load(doc: SourceDocument, files: Mapping[str, Any] | None = None) -> Template:
    data = doc.data
    if not isinstance(data, Mapping):
        raise StackValidationFailed(doc.location(()),
                                    reason="Template not in valid format: it must be a map.")
    version = _version(doc, data)
    template = cfn.load(doc, version, files) if version.is_cfn else hot.load(doc, version, files)
    for name, definition in template.resources.items():
        # The columns that hold a resource's name and type (its own and its events') are
        # this long: refused here rather than failing the stack when it is stored.
        if len(name) > MAX_NAME_CHARS or len(definition.type) > MAX_NAME_CHARS:
            what = "name" if len(name) > MAX_NAME_CHARS else "type"
            raise StackValidationFailed(template.location(("resources", name)), reason=(
                f"The resource {what} is longer than {MAX_NAME_CHARS} characters."))
    return template


def written_resources(doc: SourceDocument) -> int:
    """How many resources the document declares, counted before anything is read of
    them, as Heat counts them for ``max_resources_per_stack``: the entries of the
    resources section as written, whatever their conditions say (0 when the section is
    missing or not a map: ``load`` reports that)."""
    data = doc.data
    if not isinstance(data, Mapping):
        return 0
    section = data.get("Resources" if any(k in data for k in CFN_KEYS) else "resources")
    return len(section) if isinstance(section, Mapping) else 0


def _version(doc: SourceDocument, data: Mapping[str, Any]) -> HotVersion:
    # A date object counts too: a template loaded by a YAML parser that reads dates
    # (Python's yaml.safe_load) names the same version.
    keys = [k for k in (HOT_KEY, *CFN_KEYS)
            if k in data and isinstance(data[k], (str, datetime.date))]
    if len(keys) > 1:
        raise AmbiguousTemplateVersion(doc.location((keys[1],)), keys=", ".join(keys))
    if not keys:
        raise StackValidationFailed(
            doc.location(()), reason="Template not in valid format: Template format version "
                                     "not found.")
    key = keys[0]
    if key == HOT_KEY:
        version = find_hot_version(data[key])
        known = known_hot_names()
    else:
        version = find_cfn_version(key, data[key])
        known = ", ".join(v.date for v in CFN_VERSIONS if v.key == key)
    if version is None:
        raise InvalidTemplateVersion(doc.location((key,)), given=f"{key}: {data[key]}",
                                     key=key, known=known)
    return version
