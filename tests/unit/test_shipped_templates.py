"""The example templates Kiln ships (etc/kiln/templates, used by the README) build into
a valid IR with the real resource types, so a shipped example can never be invalid; the
package installs every one of them (<prefix>/share/kiln/templates)."""

from __future__ import annotations

import configparser
import pathlib

import pytest

from engine.ir.build import build, pseudo_parameters
from engine.resources.registry import ResourceTypeRegistry
from engine.template.loader import load
from engine.template.parse import parse_text

ROOT = pathlib.Path(__file__).parents[2]
TEMPLATES = sorted((ROOT / "etc/kiln/templates").glob("*.yaml"))


def test_the_examples_the_readme_names_are_shipped() -> None:
    readme = (ROOT / "README.rst").read_text()
    named = {name for name in (path.name for path in TEMPLATES) if name in readme}

    assert named and named == {path.name for path in TEMPLATES}


def test_the_package_installs_every_example() -> None:
    # setup.cfg's data_files, as setuptools reads them: a glob per line, from the root.
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    patterns = setup["options.data_files"]["share/kiln/templates"].split()
    installed = sorted(path for pattern in patterns for path in ROOT.glob(pattern))

    assert installed == TEMPLATES


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda path: path.name)
def test_a_shipped_template_builds(path: pathlib.Path, registry: ResourceTypeRegistry) -> None:
    stack = build(load(parse_text(path.read_text(), path.name)), {},
                  pseudo_parameters("stack-id", path.stem, "tenant-id"), registry.get,
                  constraints=registry.constraint)

    assert stack.resources
    assert stack.outputs
