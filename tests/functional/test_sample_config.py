"""etc/kiln/kiln.conf.sample is generated, never hand-edited: it must match the options."""

from __future__ import annotations

import pathlib
import subprocess

from tests.functional import servers

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_sample_config_is_current(tmp_path: pathlib.Path) -> None:
    generated = tmp_path / "kiln.conf.sample"
    subprocess.run([str(servers.BIN / "oslo-config-generator"), "--config-file",
                    str(ROOT / "etc/kiln/kiln-config-generator.conf"), "--output-file",
                    str(generated)], check=True, timeout=60, cwd=ROOT)
    committed = (ROOT / "etc/kiln/kiln.conf.sample").read_text()
    assert generated.read_text() == committed, "run `make sample-config` and commit the result"
