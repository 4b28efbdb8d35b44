"""The template versions Kiln accepts and the functions each one offers."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import flag
from engine.services import template_info


class TemplateVersionCollection:
    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"template_versions": [
            views.template_version(v) for v in template_info.template_versions()]}


class TemplateFunctionCollection:
    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               template_version: str) -> None:
        functions = template_info.template_functions(
            template_version, with_condition=flag(req, "with_condition_func"))
        resp.media = {"template_functions": [views.template_function(f) for f in functions]}
