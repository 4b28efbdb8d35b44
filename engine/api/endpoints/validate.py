"""``POST /validate``: check a template as a create would, without creating anything.

Answers Heat's shape (the parameters, for a form that asks for them) plus Kiln's
``lifecycle``: what each lifecycle plugin would say of a create of the template. A plugin
that would deny refuses the request (``LifecycleDenied``, 400 with Heat's fault body), so
the clients fail with its message; a warning is reported in the 200 answer.
"""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import context, flag, json_body
from engine.errors import BadRequest
from engine.services.stack_dry_runs import StackDryRuns

# The error codes Heat lets a validate ignore: 99001 is a resource's service being
# unavailable, which Kiln never reports, so ignoring it changes nothing.
IGNORABLE_ERRORS = frozenset({"99001"})


class TemplateValidate:
    def __init__(self, dry_runs: StackDryRuns) -> None:
        self._dry_runs = dry_runs

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        # Checked as a boolean, as Heat checks it, and otherwise ignored: the answer is
        # the top stack's, without the nested templates' parameters.
        flag(req, "show_nested")
        ignored = set(req.get_param_as_list("ignore_errors") or ())
        unknown = sorted(ignored - IGNORABLE_ERRORS)
        if unknown:
            raise BadRequest(reason=f"Invalid codes in ignore_errors: {unknown}")
        resp.media = views.template_validation(
            self._dry_runs.validate(context(req), json_body(req)))
