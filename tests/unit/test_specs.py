"""The specs name real code: every ``path.py:Qualified.name``, module path and dotted
``engine.…`` name they give exists, so the map a newcomer opens first
(``specs/architecture.rst``) and the capability specs stay true as the code moves."""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import pathlib
import re

import docutils.core
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "specs" / "architecture.rst"
SPECS = sorted((ROOT / "specs").glob("*.rst"))

# A reference: a path under engine/ or plugins/ ending in .py, a colon and a dotted name,
# as in ``engine/api/endpoints/stacks.py:StackCollection.on_post``.
REFERENCE = re.compile(r"\b((?:engine|plugins)/[\w/]+\.py):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
# A path alone: a module (``engine/db/steps.py``) or a package (``engine/worker/``).
PATH = re.compile(r"(?<![\w/.])((?:engine|plugins)/[\w/]*\w(?:\.py|/))(?![\w:])")
# A dotted name in a literal, module first: ``engine.db.transitions.begin``.
DOTTED = re.compile(r"``((?:engine|plugins)(?:\.[A-Za-z_]\w*)+)``")
# The section with one row per spec.
BUILT_TITLE = "What is built"
# The section that walks a stack create from the request to its final state.
HOPS_TITLE = "The path of a stack create"
MIN_HOPS = 30


def _text() -> str:
    return ARCHITECTURE.read_text(encoding="utf-8")


def _all_text() -> str:
    return "\n".join(spec.read_text(encoding="utf-8") for spec in SPECS)


def _section(text: str, title: str) -> str:
    """The body of the section ``title`` (up to the next title of the same level)."""
    lines = text.splitlines()
    start = lines.index(title)
    underline = lines[start + 1][0]
    body = []
    for index in range(start + 2, len(lines) - 1):
        following = lines[index + 1]
        if lines[index] and following and set(following) == {underline} \
                and len(following) >= len(lines[index]):
            break
        body.append(lines[index])
    return "\n".join(body)


@functools.cache
def _names(path: str) -> dict[str, ast.AST]:
    """Every name a module defines at its top level and in its classes, dotted."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    found: dict[str, ast.AST] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found[prefix + node.name] = node
                if isinstance(node, ast.ClassDef):
                    collect(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[prefix + target.id] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found[prefix + node.target.id] = node

    collect(tree.body, "")
    return found


def _resolves(dotted: str) -> bool:
    """Whether ``engine.x.y.Name.attr`` is a module or package, or a name one defines."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        module = base.with_suffix(".py")
        rest = ".".join(parts[cut:])
        if module.is_file():
            return not rest or rest in _names(str(module.relative_to(ROOT)))
        if not rest and (base / "__init__.py").is_file():
            return True
    # A package installed from elsewhere in the checkout (``engine.migrations``).
    try:
        return importlib.util.find_spec(dotted) is not None
    except ModuleNotFoundError:
        return False


def test_the_architecture_spec_has_a_hop_list_of_a_stack_create() -> None:
    hops = REFERENCE.findall(_section(_text(), HOPS_TITLE))

    assert len(hops) >= MIN_HOPS, f"only {len(hops)} path:name hops found"


@pytest.mark.parametrize("reference", sorted({":".join(found)
                                              for found in REFERENCE.findall(_all_text())}))
def test_a_path_and_name_the_spec_gives_exists(reference: str) -> None:
    path, name = reference.split(":")
    assert (ROOT / path).is_file(), f"{path} does not exist"
    assert name in _names(path), f"{path} defines no {name}"


def test_every_module_path_the_spec_gives_exists() -> None:
    missing = sorted({path for path in PATH.findall(_all_text())
                      if not (ROOT / path).exists()})

    assert missing == []


def test_every_dotted_name_the_spec_gives_exists() -> None:
    missing = sorted({name for name in DOTTED.findall(_all_text()) if not _resolves(name)})

    assert missing == []


def test_what_is_built_has_a_row_for_every_spec() -> None:
    table = _section(_text(), BUILT_TITLE)
    specs = [path.name for path in SPECS]

    assert [name for name in specs if f"``{name}``" not in table] == []


@pytest.mark.parametrize("spec", SPECS, ids=lambda path: path.name)
def test_a_spec_is_valid_restructured_text(spec: pathlib.Path) -> None:
    warnings = io.StringIO()
    docutils.core.publish_doctree(spec.read_text(encoding="utf-8"), source_path=str(spec),
                                  settings_overrides={"warning_stream": warnings,
                                                      "report_level": 2})

    assert warnings.getvalue() == ""
