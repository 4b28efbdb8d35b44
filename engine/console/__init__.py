"""The web console's static files (specs/console.rst): HTML, CSS and plain ES modules under
``static/``, served by the API app under ``/console``. No Python logic lives here."""

from __future__ import annotations

import pathlib

#: ``index.html``, ``js/*.js`` and ``css/*.css``; shipped in the wheel as package data.
STATIC_DIR = pathlib.Path(__file__).resolve().parent / "static"
