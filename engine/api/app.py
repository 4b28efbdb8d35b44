"""``create_app``: the Falcon application and the Heat v1 route table."""

from __future__ import annotations

import dataclasses

import falcon

from engine import console
from engine.api import errors, middleware
from engine.api.endpoints import (
    actions,
    approval,
    events,
    graph,
    health,
    lifecycle,
    lifecycle_plugins,
    lookup_arn,
    metrics,
    operations,
    resource_types,
    resources,
    services,
    session,
    snapshots,
    software_configs,
    source,
    stacks,
    template_versions,
    validate,
    versions,
    workers,
)
from engine.services.approvals import Approvals
from engine.services.events import StackEvents
from engine.services.health import HealthService
from engine.services.lifecycle import LifecycleService
from engine.services.operator import OperatorService
from engine.services.resource_types import ResourceTypes
from engine.services.snapshots import StackSnapshots
from engine.services.software_configs import SoftwareConfigs
from engine.services.stack_actions import StackActions
from engine.services.stack_dry_runs import StackDryRuns
from engine.services.stack_graph import StackGraphs
from engine.services.stack_reads import StackReads
from engine.services.stack_resources import StackResources
from engine.services.stack_writes import StackWrites
from engine.services.tenants import TenantService
from engine.services.workers import WorkerService

T = "/v1/{tenant_id}"
STACK = T + "/stacks/{stack_name}/{stack_id}"
CONSOLE = "/console"
LOOKUP_SUFFIXES = ("resources", "events", "template", "actions", "environment", "files")


@dataclasses.dataclass(frozen=True)
class ApiSettings:
    max_body_bytes: int = 1048576
    #: What ``GET /build_info`` reports: the installed package's version by default.
    revision: str = dataclasses.field(default_factory=versions.package_version)
    #: ``[api] healthcheck_detailed``: the detailed /healthcheck view for every caller.
    healthcheck_detailed: bool = False
    #: kiln-api's PROMETHEUS_MULTIPROC_DIR: /metrics sums every gunicorn worker's metrics
    #: kept there. None: the process's own (kiln-all).
    metrics_multiprocess_dir: str | None = None


@dataclasses.dataclass(frozen=True)
class ApiServices:
    """The services the endpoints use; each endpoint is handed only the ones it needs."""

    stack_writes: StackWrites
    stack_dry_runs: StackDryRuns
    stack_reads: StackReads
    stack_actions: StackActions
    resources: StackResources
    events: StackEvents
    resource_types: ResourceTypes
    tenants: TenantService
    lifecycle: LifecycleService
    workers: WorkerService
    health: HealthService
    approvals: Approvals
    graphs: StackGraphs
    operator: OperatorService
    snapshots: StackSnapshots
    software_configs: SoftwareConfigs


def create_app(svc: ApiServices, settings: ApiSettings
               ) -> falcon.App[falcon.Request, falcon.Response]:
    # A tuple, so that mypy checks each component against Falcon's middleware protocols.
    app = falcon.App(middleware=(
        middleware.RequestMetrics(),
        middleware.RequestId(),
        middleware.AccessLog(),
        middleware.UrlText(),
        middleware.BodyLimit(settings.max_body_bytes),
        middleware.Authenticate(svc.tenants),
        middleware.ConsoleHeaders(CONSOLE),
        middleware.Options(),
    ))
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    errors.register(app)

    app.add_route("/", versions.Versions())
    app.add_route("/versions", versions.Versions())
    # No tenant in the path, so Authenticate lets it through: a load balancer has no token.
    app.add_route("/healthcheck", health.Healthcheck(
        svc.health, svc.tenants, detailed=settings.healthcheck_detailed))
    # No tenant in the path either: a Prometheus server has no token.
    app.add_route("/metrics", metrics.Metrics(settings.metrics_multiprocess_dir))
    # No tenant in the path: the console asks who its token is before it knows one.
    app.add_route("/v1/session", session.Session(svc.tenants))
    app.add_route(T + "/build_info", versions.BuildInfo(settings.revision))
    app.add_route(T + "/services", services.ServiceCollection(svc.workers))
    # The console's operator pages (admin only): every tenant's, whatever the path's.
    app.add_route(T + "/operations", operations.OperationCollection(svc.operator))
    app.add_route(T + "/workers", workers.WorkerCollection(svc.workers))
    app.add_route(T + "/lifecycle_plugins",
                  lifecycle_plugins.LifecyclePluginCollection(svc.lifecycle, svc.events))

    app.add_route(T + "/stacks", stacks.StackCollection(svc.stack_reads, svc.stack_writes))
    app.add_route(T + "/stacks/detail", stacks.StackDetailCollection(svc.stack_reads))
    # Literal segments win over fields in Falcon's router; added first all the same, so
    # the table reads in the order the paths are matched.
    app.add_route(T + "/stacks/preview",
                  stacks.StackPreview(svc.stack_dry_runs, svc.stack_reads))
    app.add_route(T + "/stacks/{stack_name}", stacks.StackLookup(svc.stack_reads))
    for suffix in LOOKUP_SUFFIXES:
        app.add_route(T + "/stacks/{stack_name}/" + suffix,
                      stacks.StackLookup(svc.stack_reads, "/" + suffix))
    app.add_route(STACK, stacks.StackItem(svc.stack_reads, svc.stack_writes))
    app.add_route(STACK + "/preview", stacks.StackUpdatePreview(svc.stack_dry_runs))
    app.add_route(STACK + "/template", stacks.StackTemplate(svc.stack_reads))
    app.add_route(STACK + "/environment", stacks.StackEnvironment(svc.stack_reads))
    app.add_route(STACK + "/files", stacks.StackFiles(svc.stack_reads))
    app.add_route(STACK + "/actions", actions.StackActionsEndpoint(svc.stack_actions))
    app.add_route(STACK + "/abandon", actions.StackAbandon(svc.stack_actions))
    app.add_route(STACK + "/export", actions.StackExport(svc.stack_actions))
    app.add_route(STACK + "/lifecycle",
                  lifecycle.StackLifecycle(svc.stack_reads, svc.events, svc.lifecycle))
    app.add_route(STACK + "/approval", approval.StackApproval(svc.approvals))
    app.add_route(STACK + "/graph", graph.StackGraph(svc.graphs))
    app.add_route(STACK + "/source", source.StackSource(svc.stack_reads))
    app.add_route(STACK + "/outputs", stacks.OutputCollection(svc.stack_reads))
    app.add_route(STACK + "/outputs/{output_key}", stacks.OutputItem(svc.stack_reads))
    app.add_route(STACK + "/snapshots", snapshots.SnapshotCollection(svc.snapshots))
    app.add_route(STACK + "/snapshots/{snapshot_id}", snapshots.SnapshotItem(svc.snapshots))
    app.add_route(STACK + "/snapshots/{snapshot_id}/restore",
                  snapshots.SnapshotRestore(svc.snapshots))

    app.add_route(STACK + "/resources", resources.ResourceCollection(svc.resources))
    app.add_route(STACK + "/resources/{resource_name}", resources.ResourceItem(svc.resources))
    app.add_route(STACK + "/resources/{resource_name}/metadata",
                  resources.ResourceMetadata(svc.resources))
    app.add_route(STACK + "/resources/{resource_name}/signal",
                  resources.ResourceSignal(svc.resources))
    app.add_route(STACK + "/events", events.EventCollection(svc.events))
    app.add_route(STACK + "/resources/{resource_name}/events",
                  events.ResourceEventCollection(svc.events))
    app.add_route(STACK + "/resources/{resource_name}/events/{event_id}",
                  events.EventItem(svc.events))

    app.add_route(T + "/validate", validate.TemplateValidate(svc.stack_dry_runs))
    app.add_route(T + "/resource_types",
                  resource_types.ResourceTypeCollection(svc.resource_types))
    app.add_route(T + "/resource_types/{type_name}",
                  resource_types.ResourceTypeItem(svc.resource_types))
    app.add_route(T + "/resource_types/{type_name}/template",
                  resource_types.ResourceTypeTemplate(svc.resource_types))
    app.add_route(T + "/template_versions", template_versions.TemplateVersionCollection())
    app.add_route(T + "/template_versions/{template_version}/functions",
                  template_versions.TemplateFunctionCollection())

    configs = svc.software_configs
    app.add_route(T + "/software_configs", software_configs.ConfigCollection(configs))
    app.add_route(T + "/software_configs/{config_id}", software_configs.ConfigItem(configs))
    app.add_route(T + "/software_deployments",
                  software_configs.DeploymentCollection(configs))
    app.add_route(T + "/software_deployments/metadata/{server_id}",
                  software_configs.DeploymentMetadata(configs))
    app.add_route(T + "/software_deployments/{deployment_id}",
                  software_configs.DeploymentItem(configs))

    # The console's static files (specs/console.rst), tried after every route and sink.
    # Falcon matches static routes last added first: /console/static/... is the assets
    # alone (a missing one is a 404); /console itself, and any other path under it, is
    # the single page (a hash-routed page has no path of its own to serve).
    app.add_static_route(CONSOLE, console.STATIC_DIR, fallback_filename="index.html")
    app.add_static_route(CONSOLE + "/static", console.STATIC_DIR)

    # Last: a sink is tried only when no route matched (see lookup_arn for why a sink).
    app.add_sink(lookup_arn.ArnLookup(svc.stack_reads, svc.tenants),
                 lookup_arn.ARN_SINK_PREFIX)
    return app
