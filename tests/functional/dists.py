"""Test distributions (``tests/dists``): real packages with entry points, built and
installed with pip into a directory of their own, as an operator installs plugins."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

DISTS = pathlib.Path(__file__).parents[1] / "dists"


def pip_install(distribution: str, target: pathlib.Path) -> pathlib.Path:
    """A real ``pip install`` of a test distribution into ``target``, so only the Kiln
    processes that put it on their path see its entry points. It is built from a copy:
    setuptools writes build/ and egg-info next to the sources, and parallel test workers
    must neither race there nor leave files in the checkout."""
    source = target.parent / f"{target.name}-src"
    shutil.copytree(DISTS / distribution, source)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, capture_output=True, timeout=300)
    return target


def with_path(env: dict[str, str], site: pathlib.Path, cache: pathlib.Path) -> dict[str, str]:
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    # stevedore caches entry points per sys.path; a fresh cache keeps discovery honest.
    env["XDG_CACHE_HOME"] = str(cache)
    return env
