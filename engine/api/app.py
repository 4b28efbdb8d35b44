"""``create_app``: the Falcon application and the Heat v1 route table."""

from __future__ import annotations

import dataclasses

import falcon

from engine.api import errors, middleware
from engine.api.endpoints import (
    actions,
    events,
    lifecycle,
    lookup_arn,
    resource_types,
    resources,
    services,
    stacks,
    template_versions,
    validate,
    versions,
)
from engine.services.lifecycle import LifecycleService
from engine.services.stack_actions import StackActions
from engine.services.stacks import StackService
from engine.services.tenants import TenantService
from engine.services.workers import WorkerService

T = "/v1/{tenant_id}"
STACK = T + "/stacks/{stack_name}/{stack_id}"
LOOKUP_SUFFIXES = ("resources", "events", "template", "actions", "environment", "files")


@dataclasses.dataclass(frozen=True)
class ApiSettings:
    max_body_bytes: int = 1048576
    #: What ``GET /build_info`` reports: the installed package's version by default.
    revision: str = dataclasses.field(default_factory=versions.package_version)


def create_app(stack_service: StackService, tenant_service: TenantService,
               lifecycle_service: LifecycleService, actions_service: StackActions,
               settings: ApiSettings, workers: WorkerService
               ) -> falcon.App[falcon.Request, falcon.Response]:
    # A tuple, so that mypy checks each component against Falcon's middleware protocols.
    app = falcon.App(middleware=(
        middleware.RequestId(),
        middleware.UrlText(),
        middleware.BodyLimit(settings.max_body_bytes),
        middleware.Authenticate(tenant_service),
    ))
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    errors.register(app)

    app.add_route("/", versions.Versions())
    app.add_route("/versions", versions.Versions())
    app.add_route(T + "/build_info", versions.BuildInfo(settings.revision))
    app.add_route(T + "/services", services.ServiceCollection(workers))

    app.add_route(T + "/stacks", stacks.StackCollection(stack_service))
    app.add_route(T + "/stacks/detail", stacks.StackDetailCollection(stack_service))
    # Literal segments win over fields in Falcon's router; added first all the same, so
    # the table reads in the order the paths are matched.
    app.add_route(T + "/stacks/preview", stacks.StackPreview(stack_service))
    app.add_route(T + "/stacks/{stack_name}", stacks.StackLookup(stack_service))
    for suffix in LOOKUP_SUFFIXES:
        app.add_route(T + "/stacks/{stack_name}/" + suffix,
                      stacks.StackLookup(stack_service, "/" + suffix))
    app.add_route(STACK, stacks.StackItem(stack_service))
    app.add_route(STACK + "/preview", stacks.StackUpdatePreview(stack_service))
    app.add_route(STACK + "/template", stacks.StackTemplate(stack_service))
    app.add_route(STACK + "/environment", stacks.StackEnvironment(stack_service))
    app.add_route(STACK + "/files", stacks.StackFiles(stack_service))
    app.add_route(STACK + "/actions", actions.StackActionsEndpoint(actions_service))
    app.add_route(STACK + "/abandon", actions.StackAbandon(actions_service))
    app.add_route(STACK + "/export", actions.StackExport(actions_service))
    app.add_route(STACK + "/lifecycle",
                  lifecycle.StackLifecycle(stack_service, lifecycle_service))
    app.add_route(STACK + "/outputs", stacks.OutputCollection(stack_service))
    app.add_route(STACK + "/outputs/{output_key}", stacks.OutputItem(stack_service))

    app.add_route(STACK + "/resources", resources.ResourceCollection(stack_service))
    app.add_route(STACK + "/resources/{resource_name}", resources.ResourceItem(stack_service))
    app.add_route(STACK + "/resources/{resource_name}/metadata",
                  resources.ResourceMetadata(stack_service))
    app.add_route(STACK + "/resources/{resource_name}/signal",
                  resources.ResourceSignal(stack_service))
    app.add_route(STACK + "/events", events.EventCollection(stack_service))
    app.add_route(STACK + "/resources/{resource_name}/events",
                  events.ResourceEventCollection(stack_service))
    app.add_route(STACK + "/resources/{resource_name}/events/{event_id}",
                  events.EventItem(stack_service))

    app.add_route(T + "/validate", validate.TemplateValidate(stack_service))
    app.add_route(T + "/resource_types", resource_types.ResourceTypeCollection(stack_service))
    app.add_route(T + "/resource_types/{type_name}",
                  resource_types.ResourceTypeItem(stack_service))
    app.add_route(T + "/resource_types/{type_name}/template",
                  resource_types.ResourceTypeTemplate(stack_service))
    app.add_route(T + "/template_versions", template_versions.TemplateVersionCollection())
    app.add_route(T + "/template_versions/{template_version}/functions",
                  template_versions.TemplateFunctionCollection())

    # Last: a sink is tried only when no route matched (see lookup_arn for why a sink).
    app.add_sink(lookup_arn.ArnLookup(stack_service, tenant_service),
                 lookup_arn.ARN_SINK_PREFIX)
    return app
