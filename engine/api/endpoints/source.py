"""``GET .../stacks/{name}/{id}/source``: Kiln's addition for the console
(specs/console.rst): the stored template as YAML text, with the lines of its resources,
parameters and outputs (``StackReads.get_source``)."""

from __future__ import annotations

import falcon

from engine.api.requests import context
from engine.services.stack_reads import StackReads


class StackSource:
    def __init__(self, reads: StackReads) -> None:
        self._reads = reads

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        source = self._reads.get_source(context(req), stack_name, stack_id)
        resp.media = {"source": {"text": source.text, "lines": source.lines}}
