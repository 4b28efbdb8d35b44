"""Every file of the console (engine/console/static) is package data in setup.cfg: `make
run` installs Kiln with a non-editable ``pip install .``, which ships only the files the
globs name, so a file they miss works in the tests (an editable install) and is a 404 in
a real installation."""

from __future__ import annotations

import configparser
import pathlib

from engine import console

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_every_console_file_is_shipped_in_the_package() -> None:
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    globs = setup["options.package_data"]["engine.console"].split()
    package = pathlib.Path(console.__file__).parent
    files = [path.relative_to(package) for path in console.STATIC_DIR.rglob("*")
             if path.is_file() and "__pycache__" not in path.parts]

    # A relative pattern matches from the right: with as many parts as the path, whole.
    missed = [str(path) for path in files
              if not any(path.match(g) and len(path.parts) == len(pathlib.PurePath(g).parts)
                         for g in globs)]

    assert files
    assert missed == []
