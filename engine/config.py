"""Every oslo.config option of Kiln, by group, and ``list_opts`` for the sample generator.

Options are declared here and read only in ``engine.bootstrap`` and ``engine.cmd``; the rest
of the engine receives plain values (``engine.budget`` and ``engine.worker.poison`` read
the declared defaults of their limits, :func:`declared_default`, so that they are written
only here; :func:`plugin_options`, which bootstrap calls once when it builds the API,
reads the options the lifecycle plugins list). Every option can also be set from the
environment the way oslo.config does it: ``OS_<GROUP>__<OPTION>`` (``OS_API__BIND_PORT=18004``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any

from oslo_config import cfg, types

LOG = logging.getLogger(__name__)

#: Where a user's Kiln keeps its state unless told otherwise: beside ~/.kiln/kiln.conf,
#: the same from every working directory (see specs/architecture.rst, Configuration).
DEFAULT_STATE_PATH = "~/.kiln/state"
#: The config files looked for when no --config-file is given, first found wins, as
#: oslo.config's own search does for OpenStack services (the user's before the system's).
DEFAULT_CONFIG_FILES = ("~/.kiln/kiln.conf", "/etc/kiln/kiln.conf")

default_opts = [
    cfg.StrOpt(
        "state_path",
        default=DEFAULT_STATE_PATH,
        help="Directory for Kiln's local state: the SQLite database of the embedded "
        "default and the demo credentials file. ~ is the user's home; a relative path "
        "is taken from the directory of the config file that sets it (from the current "
        "directory when set on the command line or in the environment). Packaged "
        "installs set /var/lib/kiln.",
    ),
    cfg.StrOpt(
        "host",
        default=os.uname().nodename,
        sample_default="<hostname>",
        help="Name of this host, recorded with every worker that runs here.",
    ),
    cfg.BoolOpt("debug", default=False, help="Log at DEBUG level (overrides log_level)."),
    cfg.StrOpt("log_level", default="INFO", ignore_case=True, choices=[
        ("DEBUG", "also each resource step's start and end, and libraries' details"),
        ("INFO", "the API's access line (one per request, logger kiln.access), each "
                 "operation's end, workers starting and stopping"),
        ("WARNING", "what went wrong but was handled: a lost lease, a plugin's error"),
        ("ERROR", "failures that need an operator: a Kiln bug, an operation given up")],
               help="Least severe log lines written."),
    cfg.StrOpt("log_file",
               help="File the servers (kiln-all, kiln-api, kiln-engine) log to, reopened "
               "when logrotate moves it (no copytruncate needed). ~ is the user's home; a "
               "relative path is taken from state_path. Unset: standard error. kiln-manage "
               "ignores the log_* options: its -v, -q and --log-file decide."),
    cfg.StrOpt("log_format", default="text", choices=[
        ("text", "one line per record, the request id, tenant, stack (name/id) and "
                 "operation it is about in brackets"),
        ("json", "one JSON object per line, the same as keys of their own")],
               help="How log lines are written (specs/logging.rst)."),
    cfg.StrOpt("log_config_file",
               help="A Python logging.config.fileConfig file (handlers for syslog, "
               "journald, rotation, ...) used instead of log_level, log_file and "
               "log_format; resolved as log_file is. Its formats may use %(request_id)s, "
               "%(tenant_id)s, %(stack_name)s, %(stack_id)s and %(operation_id)s, or the "
               "class engine.logs.TextFormatter or engine.logs.JsonFormatter."),
]

database_opts = [
    cfg.StrOpt(
        "connection",
        secret=True,
        help="SQLAlchemy URL of the database. Default: a SQLite file kiln.sqlite under "
        "state_path. PostgreSQL example: postgresql+psycopg://kiln@127.0.0.1/kiln",
    ),
    cfg.IntOpt("pool_size", default=10, min=1, help="Connections kept per process "
               "(PostgreSQL)."),
    cfg.IntOpt("sqlite_busy_timeout_ms", default=30000, min=0,
               help="How long a SQLite writer waits for the single write lock."),
    cfg.IntOpt("connect_timeout_seconds", default=10, min=2,
               help="How long opening a PostgreSQL connection may take before it fails "
               "(the driver's connect_timeout; 2 is its least), so that a database host "
               "that drops packets fails a request or a step in seconds instead of "
               "minutes. A connect_timeout in the query of [database] connection takes "
               "precedence."),
]

api_opts = [
    cfg.HostAddressOpt("bind_host", default="127.0.0.1", help="Address the API listens on."),
    cfg.PortOpt("bind_port", default=8004, help="Port the API listens on (Heat's is 8004)."),
    cfg.StrOpt(
        "public_url",
        help="Base URL (scheme, host and port, no path) at which servers and scripts reach "
        "the API; put into the signal URLs of OS::Heat::WaitConditionHandle resources (the "
        "role of Heat's [clients_heat] url). Default: http://<bind_host>:<bind_port>, with "
        "127.0.0.1 for a wildcard bind_host.",
    ),
    cfg.IntOpt("workers", default=2, min=1, help="gunicorn worker processes for kiln-api."),
    cfg.IntOpt("threads", default=4, min=1,
               help="Request threads per API process. Python runs one thread of a "
               "process at a time: in kiln-all each busy request thread takes about as "
               "large a share of the process as the worker beside it, so more threads "
               "starve the worker under API load (specs/back-pressure.rst)."),
    cfg.IntOpt(
        "max_body_bytes",
        default=1048576,
        min=1024,
        help="Largest request body accepted; larger ones get 400 RequestLimitExceeded.",
    ),
    cfg.IntOpt(
        "max_template_bytes",
        default=524288,
        min=1024,
        help="Largest template accepted (as text, or as JSON when sent as an object).",
    ),
    cfg.IntOpt("max_resources_per_stack", default=1000, min=1,
               help="Most resources one stack may hold: those its template declares "
               "and, counted as Heat counts them, those of every stack nested in it "
               "with them (a nested stack that would pass it fails its resource with "
               "RequestLimitExceeded). Also the most members of one group."),
    cfg.IntOpt("max_stacks_per_tenant", default=512, min=-1,
               help="Most stacks (not deleted) one tenant may have; a create past it is "
               "refused with 400 RequestLimitExceeded. -1: no limit. The quota lifecycle "
               "plugin adds per-tenant overrides."),
    cfg.IntOpt("max_snapshots_per_stack", default=32, min=-1,
               help="Most snapshots one stack may have (Heat's option and default); a "
               "snapshot past it is refused with 400 RequestLimitExceeded, except for an "
               "admin token, as in Heat. -1: no limit."),
    cfg.IntOpt("default_stacks_per_page", default=1000, min=1,
               help="Stacks in one page of GET /stacks when the request gives no limit "
               "(at most max_stacks_per_page). A page that is full links to the next. "
               "python-heatclient and the openstack CLI send no limit unless given "
               "--limit, and then show this one page; given a larger --limit they ask "
               "for the rest themselves."),
    cfg.IntOpt("max_stacks_per_page", default=1000, min=1,
               help="Most stacks in one page of GET /stacks, whatever limit the request "
               "gives: python-heatclient asks for the rest after the last one (marker) "
               "until it has its limit."),
    cfg.IntOpt("max_pending_operations", default=100, min=-1,
               help="Most operations left waiting for their first worker, across every "
               "tenant: while this many wait, a request that would queue another (create, "
               "adopt, update, delete, suspend, resume, check, abandon, snapshot, restore) "
               "is refused with 503 and Retry-After (the time the oldest has waited, 1 to "
               "60 s), before any other work. Cancels are never refused. -1: no bound."),
    cfg.BoolOpt("healthcheck_detailed", default=False,
                help="Show every caller of GET /healthcheck the detailed view (each "
                "check's details, the process's Python, platform and thread stacks), as "
                "oslo.middleware's [healthcheck] detailed does. When false only an admin "
                "token gets it. Either way the view holds no credential."),
]

engine_opts = [
    cfg.IntOpt(
        "max_parallel_steps",
        default=1024,
        min=1,
        help="Most resource steps one worker holds at once. Waiting steps hold no "
        "thread (a few kilobytes each), so this bounds memory and backend load, not "
        "threads.",
    ),
    cfg.Opt("type_concurrency", type=types.Dict(types.Integer(min=1)), default={},
            help="Most steps of one resource type one worker holds at once, for types "
            "whose backend rate-limits, e.g. AWS::EC2::Instance:8,OS::Nova::Server:16. "
            "Types not named are bounded by max_parallel_steps only."),
    cfg.FloatOpt("lease_seconds", default=1.5, min=0.2,
                 help="How long a worker counts as alive after it last renewed its "
                 "liveness (one row of the workers table): the operations and steps it "
                 "claimed are its own until then. Past it, the next heartbeat of any "
                 "other worker fences it and the others take its work over, so a worker "
                 "that dies (SIGKILL, a lost machine) is noticed within this plus a "
                 "heartbeat. A worker that cannot renew stops acting on its claims a "
                 "heartbeat before this runs out (by its own monotonic clock); on "
                 "PostgreSQL the database's clock decides when it ran out, so the engine "
                 "hosts' clocks may differ. Must be at least twice "
                 "heartbeat_interval_seconds."),
    cfg.FloatOpt("heartbeat_interval_seconds", default=0.25, min=0.05,
                 help="How often a worker renews its liveness, from a thread of its own: "
                 "one UPDATE of its own row, whatever it holds, and one that fences the "
                 "workers whose liveness ran out."),
    cfg.FloatOpt("stall_seconds", default=60.0, min=0.0,
                 help="A worker whose loop has not moved on for this long (a resource "
                 "handler that never returns) stops renewing its liveness, so the other "
                 "workers take its work over; it rejoins under a new id should its loop "
                 "move again. 0: never."),
    cfg.FloatOpt("idle_poll_seconds", default=1.0, min=0.01,
                 help="Longest sleep of an idle worker before it looks for work again. "
                      "New work wakes it at once (in its own process, and through "
                      "LISTEN/NOTIFY on PostgreSQL, as does a dead worker fenced by "
                      "another); the poll finds what no notification announces: "
                      "timed-out operations and retries whose wait is over."),
    cfg.FloatOpt("max_step_poll_seconds", default=1.0, min=0.01,
                 help="Longest interval between two completion checks of a waiting step."),
    cfg.IntOpt("operation_threads", default=4, min=1,
               help="Threads per worker that advance operations: plan, finish and call "
               "lifecycle plugins, so a slow plugin never stalls resource work."),
    cfg.IntOpt("stack_action_timeout_seconds", default=3600, min=1,
               help="Timeout of a stack operation when the request gives no timeout_mins."),
    cfg.IntOpt("internal_error_attempts", default=3, min=1,
               help="Tries of an operation phase (pre-ops, plan, time-out, finish, "
               "post-ops) or of a resource step that fails on an unexpected error (a "
               "Kiln bug, not a plugin's failure) or whose worker dies during it. Then "
               "the step or the stack is <ACTION>_FAILED with a reason naming the "
               "operation and request to find in the engine log (post-ops that keep "
               "failing are skipped, logged)."),
    cfg.FloatOpt("internal_error_backoff_seconds", default=0.5, min=0.0,
                 help="Wait before the second try of what failed on an unexpected "
                 "error, doubled before each further try (at most 60 s). With the "
                 "defaults an operation that keeps failing ends about 3.5 s after its "
                 "first failure; one that kills its worker, after a lease per try."),
    cfg.HostAddressOpt("metrics_host", default="127.0.0.1",
                       help="Address kiln-engine serves its Prometheus metrics on (see "
                       "metrics_port)."),
    cfg.PortOpt("metrics_port", default=0,
                help="Port kiln-engine serves its Prometheus metrics on, at "
                "http://<metrics_host>:<metrics_port>/metrics; 0: not served. Several "
                "kiln-engine processes on one machine need a port each (give each its "
                "own with OS_ENGINE__METRICS_PORT). kiln-api and kiln-all serve /metrics "
                "on the API's port instead."),
]

template_opts: list[cfg.Opt] = [
    cfg.IntOpt("max_value_chars", default=1048576, min=1024,
               help="Largest value any template function may produce, counted as one "
               "for every value in it (scalar, list, map key) plus the characters of its "
               "strings: about the length of its JSON. A function that would produce more "
               "(str_replace, repeat, list_join, yaql, ...) is refused: 400 when the API "
               "evaluates it, the resource FAILED when its value is known only at run "
               "time. The default is [api] max_body_bytes: no value needs to be larger "
               "than the largest request."),
    cfg.IntOpt("max_function_items", default=10000, min=1,
               help="Most items one template function may make: the combinations of a "
               "repeat, the items of list_concat, list_join and str_split, the keys of "
               "map_merge. Checked before the work starts."),
    cfg.FloatOpt("evaluation_timeout_seconds", default=2.0, min=0.01,
                 help="Time the regular expressions (allowed_pattern, AllowedPattern, "
                 "yaql's regex functions), the yaql expressions and the str_replace calls "
                 "of one evaluation (a request's template, one resource's properties, a "
                 "stack's outputs) may take in all, by the wall clock. A pattern that "
                 "backtracks for ever, a yaql loop or a str_replace of thousands of keys "
                 "over a long text stops there with a clear error."),
]

yaql_opts: list[cfg.Opt] = [
    cfg.IntOpt("limit_iterators", default=200, min=1,
               help="Heat's option of the same name: most items a yaql collection may "
               "hold, and the most any iterator may yield."),
    cfg.IntOpt("memory_quota", default=10000, min=1,
               help="Heat's option of the same name: most bytes one yaql value may take "
               "(Python's own count, shallow)."),
]

lifecycle_plugin_opts = [
    cfg.ListOpt("enabled", default=[],
                help="Lifecycle plugins to call, by entry-point name. Empty: every plugin "
                "installed in namespace kiln.lifecycle_plugins. Naming a plugin that is not "
                "installed stops Kiln at start."),
    cfg.ListOpt("disabled", default=[],
                help="Installed lifecycle plugins not to call."),
    cfg.FloatOpt("timeout_seconds", default=30.0, min=0.01,
                 help="Longest a pre-op or post-op call may take before it is abandoned."),
    cfg.StrOpt("on_timeout", default="fail", choices=["fail", "warn"],
               help="What a pre-op timeout does: fail the operation, or record a warning "
               "and go on."),
    cfg.DictOpt("plugin_timeout_seconds", default={},
                help="Per-plugin timeout_seconds, e.g. placement:60,licence:5."),
    cfg.DictOpt("plugin_on_timeout", default={},
                help="Per-plugin on_timeout, e.g. licence:warn."),
    cfg.FloatOpt("approval_window_seconds", default=86400.0, min=1.0,
                 help="How long an operation a pre-op parked for approval (an approval "
                 "gate) waits for a decision before it is rejected as expired, unless the "
                 "plugin's verdict gives its own window."),
    cfg.BoolOpt("check_at_the_door", default=True,
                help="Before a stack create, adopt or update (PUT or PATCH) is stored, ask "
                "every plugin that supports dry runs for its verdict, as a preview does, "
                "and refuse the request (400 LifecycleDenied, nothing stored) when one "
                "denies or fails. The worker's real pre-ops still decide the operation."),
    cfg.FloatOpt("door_timeout_seconds", default=5.0, min=0.01,
                 help="Longest each plugin's dry run may take before a create or update "
                 "is stored (check_at_the_door); a plugin's own timeout_seconds applies "
                 "when shorter. A plugin that does not answer in time refuses nothing: "
                 "the request is stored and the worker's real pre-op decides."),
]

event_sink_opts: list[cfg.Opt] = [
    cfg.FloatOpt("timeout_seconds", default=5.0, min=0.1,
                 help="Longest one delivery's send may take, all of it: the connection, "
                 "the request, the answer and any redirect (an answer trickled slower is "
                 "cut off). A delivery not answered 2xx in time is tried again later; "
                 "its claim lasts three times this from when it is taken, so an engine "
                 "that dies mid-delivery leaves it to another engine (or to its own "
                 "restart) that soon."),
    cfg.IntOpt("max_attempts", default=10, min=1,
               help="Tries of one event's delivery to one sink before it is given up "
                    "(logged at WARNING, counted in kiln_event_deliveries_total with "
                    "outcome given_up, and kept in the outbox for the operator)."),
    cfg.FloatOpt("backoff_seconds", default=1.0, min=0.0,
                 help="Wait before the second try of a failed delivery; doubled before "
                 "each further try up to max_backoff_seconds, half of each wait random. "
                 "With the defaults a receiver that stays down is given up 4 to 9 "
                 "minutes after the first try."),
    cfg.FloatOpt("max_backoff_seconds", default=300.0, min=0.0,
                 help="Longest wait between two tries of a delivery."),
    cfg.FloatOpt("poll_seconds", default=1.0, min=0.01,
                 help="How often each engine process looks for deliveries that are due "
                 "(one indexed read; the write lock is taken only when some are)."),
    cfg.IntOpt("batch_size", default=20, min=1,
               help="Deliveries one engine process claims at a time."),
    cfg.IntOpt("threads", default=4, min=1,
               help="Threads per engine process that send deliveries, one target at a "
               "time each. A target's deliveries are settled as soon as its thread is "
               "done; a slow receiver delays other targets' next batch by at most a "
               "claim's lease (three times timeout_seconds)."),
    cfg.ListOpt("allowed_schemes", default=["http", "https"],
                item_type=types.String(choices=["http", "https"]),
                help="URL schemes a webhook sink's target may use. A stack create or "
                "update naming another is refused (400); deliveries already owed to one "
                "are given up."),
    cfg.IntOpt("max_per_stack", default=5, min=0,
               help="Event sinks one stack's environment may name; a create or update "
               "naming more is refused (400). A stored stack's sinks beyond it are "
               "dropped at its next update (logged at WARNING)."),
    cfg.BoolOpt("allow_private_targets", default=False,
                help="Whether a sink's target may be an address that is not public: "
                "loopback, link-local (169.254.0.0/16, fe80::/10, where cloud metadata "
                "services answer), private networks and other special ranges. Checked "
                "on every connection, on the address the host name resolved to, so a "
                "name that later resolves elsewhere cannot get around it; a delivery "
                "to such an address is given up. Turn it on only where tenants may "
                "reach the engines' own networks."),
]

GROUPS: dict[str | None, list[cfg.Opt]] = {
    None: default_opts,
    "database": database_opts,
    "api": api_opts,
    "engine": engine_opts,
    "template": template_opts,
    "yaql": yaql_opts,
    "lifecycle_plugins": lifecycle_plugin_opts,
    "event_sinks": event_sink_opts,
}


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in GROUPS.items():
        conf.register_opts(opts, group=group)


def list_opts() -> list[tuple[str | None, Sequence[cfg.Opt]]]:
    """Entry point ``oslo.config.opts: kiln`` used by oslo-config-generator."""
    return [(group, list(opts)) for group, opts in GROUPS.items()]


def declared_default(group: str | None, name: str) -> Any:
    """The default ``[group] name`` is declared with above, before any file or the
    environment is read: what ``engine.budget`` holds until the process is configured
    (and the poison rule of a worker built without a configuration), so that a limit's
    default is written once, here."""
    for opt in GROUPS[group]:
        if opt.dest == name:
            return opt.default
    raise KeyError(f"no option [{group}] {name}")


def load(argv: Sequence[str] | None = None, prog: str = "kiln",
         description: str | None = None) -> cfg.ConfigOpts:
    """Build a fresh ConfigOpts from argv (``--config-file``, else the first of
    :data:`DEFAULT_CONFIG_FILES`) and the environment, with ``state_path`` resolved to
    an absolute path once (:func:`state_path`), so that no reader depends on the current
    directory. ``description`` heads ``--help``, followed by :func:`help_epilog`."""
    conf = cfg.ConfigOpts()
    register_opts(conf)
    _without_shell_completion(conf)
    conf(list(argv or []), project="kiln", prog=prog, default_config_files=_default_files(),
         description=description, epilog=help_epilog())
    conf.set_override("state_path", state_path(conf))
    return conf


def _without_shell_completion(conf: cfg.ConfigOpts) -> None:
    """Drop oslo.config's ``--shell_completion``: it reads a template that its wheel does
    not ship (FileNotFoundError), and Kiln's commands have nothing but --config-file and
    --config-dir to complete. Both halves are needed: oslo.config answers
    ``--shell_completion bash`` in first position before argparse sees it, so the option
    must be gone from the parser and the shells from the ones it answers; argparse then
    refuses it as any unknown option (exit 2)."""
    conf.unregister_opt(cfg.ConfigOpts._shell_completion_opt)
    conf.supported_shell_completion = []


def help_epilog() -> str:
    """The end of every command's ``--help``: where options come from, so that an operator
    need not read this module to learn the config files or the environment's form.
    argparse expands ``%(prog)s``."""
    files = " and ".join(DEFAULT_CONFIG_FILES)
    return ("Options are read from the files given with --config-file, else from the first "
            f"of {files} that exists. Every option can also be set in the environment as "
            "OS_<GROUP>__<OPTION>, which wins over the files ([DEFAULT] options as "
            "OS_DEFAULT__<OPTION>), e.g. OS_API__BIND_PORT=18004 %(prog)s")


def _default_files() -> list[str]:
    """The first of :data:`DEFAULT_CONFIG_FILES` that exists (none: defaults and the
    environment only). One file, not a merge: ``~/.kiln/kiln.conf`` stands for the
    system's, so a user's Kiln is never half theirs and half the host's."""
    for candidate in DEFAULT_CONFIG_FILES:
        path = os.path.expanduser(candidate)
        if os.path.exists(path):
            return [path]
    return []


def state_path(conf: cfg.ConfigOpts) -> str:
    """``[DEFAULT] state_path``, absolute: ``~`` expanded, and a relative path taken from
    the directory of the config file that set it, so that a file means the same database
    from every working directory (a value from the command line or the environment is
    taken from the current directory, as the shell would)."""
    path = os.path.expanduser(str(conf.state_path))
    if not os.path.isabs(path):
        where = conf.get_location("state_path")
        base = os.getcwd()
        if where is not None and where.location is cfg.Locations.user and where.detail:
            base = os.path.dirname(os.path.abspath(where.detail))
        path = os.path.join(base, path)
    return os.path.normpath(path)


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The config files this configuration was read from."""
    return [os.path.abspath(path) for path in conf.config_file or []]


def log_path(conf: cfg.ConfigOpts, option: str) -> str | None:
    """``[DEFAULT] log_file`` or ``log_config_file``, absolute: ``~`` expanded, and a
    relative path taken from ``state_path``, beside the SQLite file; None when unset."""
    value = getattr(conf, option)
    if not value:
        return None
    return os.path.normpath(os.path.join(state_path(conf), os.path.expanduser(str(value))))


def database_url(conf: cfg.ConfigOpts) -> str:
    if conf.database.connection:
        return str(conf.database.connection)
    return "sqlite:///" + os.path.join(state_path(conf), "kiln.sqlite")


#: A lifecycle plugin lists its options for the sample configuration under the
#: ``oslo.config.opts`` entry point of this prefix and its name (``kiln.lifecycle.quota``).
PLUGIN_OPTS_PREFIX = "kiln.lifecycle."


@dataclasses.dataclass(frozen=True)
class OptionValue:
    group: str
    name: str
    value: Any  # as configured, in JSON's types: a secret one too; whoever shows it masks it
    secret: bool


def plugin_options(conf: cfg.ConfigOpts, plugins: Iterable[str]
                   ) -> dict[str, list[OptionValue]]:
    """The options each lifecycle plugin of ``plugins`` lists (its ``oslo.config.opts``
    entry point ``kiln.lifecycle.<plugin>``), with this process's values; none for one
    that lists none, or whose listing fails to load (a disabled plugin may be broken).

    Registers the options it reads that nothing has yet (a disabled plugin never
    registers its own), so bootstrap calls it once, before any request: oslo.config's
    registry is no place for request threads to write."""
    wanted = {PLUGIN_OPTS_PREFIX + name: name for name in plugins}
    listed: dict[str, list[tuple[str | cfg.OptGroup | None, Sequence[cfg.Opt]]]] = {
        name: [] for name in wanted.values()}
    broken: set[str] = set()
    for entry_point in importlib.metadata.entry_points(group="oslo.config.opts"):
        plugin = wanted.get(entry_point.name)
        if plugin is None:
            continue
        try:
            listed[plugin] += entry_point.load()()
        except Exception:  # noqa: BLE001 -- a plugin's code: its failure shows no options
            LOG.warning("the options of lifecycle plugin %s could not be listed", plugin,
                        exc_info=True)
            broken.add(plugin)
    return {plugin: [] if plugin in broken else option_values(conf, found)
            for plugin, found in listed.items()}


def option_values(conf: cfg.ConfigOpts,
                  listed: Sequence[tuple[str | cfg.OptGroup | None, Sequence[cfg.Opt]]]
                  ) -> list[OptionValue]:
    """The values of ``listed`` options, each group named as oslo.config's ``list_opts``
    allows (a name, an ``OptGroup`` or None for DEFAULT), registered first when nothing
    has yet; one that does not read is None, one JSON cannot hold its text."""
    values = []
    for group, opts in listed:
        name = group.name if isinstance(group, cfg.OptGroup) else group
        for opt in opts:
            # The plugin may have registered one of that name otherwise: its value is read.
            with contextlib.suppress(cfg.DuplicateOptError):
                conf.register_opt(opt, group=group)
            try:
                value = conf[name][opt.dest] if name else conf[opt.dest]
            except (cfg.Error, ValueError):
                value = None
            values.append(OptionValue(name or "DEFAULT", opt.dest, _plain(value), opt.secret))
    return values


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it: an option's type may parse to any object (an IP
    address, a URL, a plugin's own type), shown as its text."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return str(value)
