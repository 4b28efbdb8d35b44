"""A stored template rendered as YAML text, with the line of every entry of its
resources, parameters and outputs sections in that text.

Kiln keeps the parsed template, not the tenant's own text, so the text is Kiln's rendering
of it, in the template's own order. The lines are found by parsing that text again
(``parse.parse_text``, the one reader that knows lines), so they are the text's by
construction: the YAML reader counts a line at each ``\\n`` and also at U+0085, U+2028
and U+2029, which clients do not, so a string holding one of those is written
double-quoted with the character escaped (``\\N``, ``\\L``, ``\\P``), and the text's only
line breaks are ``\\n``. Hidden parameters' defaults (NoEcho in CFN) are masked before
rendering (``stored_parameters.masked_template``).

Rendering and re-parsing a large template takes a while, and the console asks for it on
every poll of a stack's graph, so :class:`Renderings` keeps them by a digest of the stored
template.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import threading
from collections.abc import Mapping
from typing import Any

import cachetools
import yaml

from engine.template.parse import parse_text
from engine.template.stored_parameters import masked_template
from engine.template.versions import is_cfn

# HOT's section names, and CFN's spelling of each.
SECTIONS = {"resources": "Resources", "parameters": "Parameters", "outputs": "Outputs"}
# Wide enough that most property values stay on their key's line.
WIDTH = 100
# The characters YAML counts as line breaks that a client splitting on "\n" does not
# ("\r" libyaml escapes of itself).
_OTHER_BREAKS = frozenset("\x85\u2028\u2029")
# The stacks (and child stacks) open in consoles at once; a rendering is about its
# template's size (at most [api] max_template_bytes), so this bounds the memory.
RENDERING_CACHE_SIZE = 64


# NOTE: libyaml's emitter when PyYAML was built with it, as the parser (parse._BaseLoader).
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # libyaml would write U+2028 and U+2029 raw in a single-quoted scalar.
    style = '"' if not _OTHER_BREAKS.isdisjoint(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


@dataclasses.dataclass(frozen=True)
class RenderedTemplate:
    text: str
    #: section (HOT's name, whatever the format) -> entry name -> 1-based line in ``text``
    lines: Mapping[str, Mapping[str, int]]


def render(template: Any) -> RenderedTemplate:
    """``template`` as YAML text; the defaults of its hidden parameters masked."""
    data = masked_template(template) if isinstance(template, Mapping) else {}
    cfn = is_cfn(data)
    names = {section: SECTIONS[section] if cfn else section for section in SECTIONS}
    text = yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=WIDTH) if data else ""
    found = parse_text(text).lines if text else {}
    lines: dict[str, dict[str, int]] = {}
    for section, key in names.items():
        entries = data.get(key)
        lines[section] = {str(name): found[(key, str(name))] for name in entries} \
            if isinstance(entries, Mapping) else {}
    return RenderedTemplate(text=text, lines=lines)


class Renderings:
    """Renderings of stored templates, by a digest of the template, in a bounded LRU
    cache. Thread-safe: the API serves from many threads."""

    def __init__(self, size: int = RENDERING_CACHE_SIZE) -> None:
        # Guarded by the lock: cachetools' caches are not thread-safe.
        self._lock = threading.Lock()
        self._cache: cachetools.LRUCache[str, RenderedTemplate] = cachetools.LRUCache(size)

    def render(self, template: Any) -> RenderedTemplate:
        """:func:`render` of ``template``, rendered once while it stays in the cache."""
        key = _digest(template)
        if key is not None:
            with self._lock:
                cached = self._cache.get(key)
            if cached is not None:
                return cached
        # Rendered outside the lock: no other stack's read should wait for a large one.
        rendered = render(template)
        if key is not None:
            with self._lock:
                self._cache[key] = rendered
        return rendered


def _digest(template: Any) -> str | None:
    """A digest of the stored template; None when it cannot be serialised (not a stored
    one: rendered every time). Pickled rather than JSON-encoded, as ``ir.stored`` does:
    a pickle loads back to what was dumped, so one digest is never two templates."""
    try:
        data = pickle.dumps(template, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return hashlib.sha256(data).hexdigest()
