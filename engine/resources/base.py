"""The contract between Kiln and a resource type: read this before writing a plugin.

A resource type is a subclass of :class:`Resource` registered under the stevedore
namespace ``kiln.resource_types`` with the template type as the entry-point name::

    [options.entry_points]
    kiln.resource_types =
        My::Thing = mypackage.thing:Thing

Start, then poll
----------------
Every action is two methods. ``handle_<action>()`` *starts* the work and returns quickly
with a *token*; ``check_<action>_complete(token)`` is then called repeatedly until it returns
True, less and less often (up to ``[engine] max_step_poll_seconds`` apart), or at the
moment ``next_check_in(token)`` names when the type knows when it will be done. Between
calls the worker holds no thread for the resource, so thousands of waiting resources
cost only memory. Neither method may block for long (no sleeping, no boto3
waiters): start the work, return, and look again when asked.

The token must be JSON-serialisable. It is stored in the database, so if the worker dies
another worker calls ``check_<action>_complete`` with the same token, on a new instance of
the class. Everything an instance needs must therefore come from its properties, its
token, :attr:`physical_id` and :attr:`data`, never from instance attributes set earlier.

Recording what exists
---------------------
Call :meth:`set_physical_id` as soon as the backend has named the new thing and *before*
waiting on it. Kiln writes it, with :attr:`data`, together with the step's token when the
handler returns (in one transaction for the round of steps the worker started together),
so it is stored before any waiting begins. :attr:`data` is a small private JSON map,
also saved after every call (a RandomString keeps its value there).

If a worker dies after ``handle_<action>`` started but before its token was saved, another
worker calls ``handle_<action>`` again on a fresh instance. For a create, that instance
already has :attr:`physical_id` set when one was recorded: continue with that thing rather
than making a second one. When none was recorded, look the thing up by the stable name
:meth:`physical_resource_name` gives (or a client token derived from it) before creating.

Failing
-------
Raise any exception to fail the action; the message becomes the resource's status
reason as ``<ExceptionType>: resources.<name>: <message>``, as Heat writes it. Do not
catch broadly to hide failures. Raise ``engine.errors`` classes only for errors in the
tenant's input found by :meth:`validate`.

Update
------
An update builds the instance with the *new* properties and calls
``needs_replacement(prop_diff)`` with the properties whose values changed. By default a
change to any property not marked ``update_allowed`` replaces the resource: a new one is
created (with a new :meth:`physical_resource_name`), the resources that use it move to
it, and the old one is deleted. Otherwise ``handle_update(prop_diff)`` changes it in place
and ``check_update_complete(token)`` is polled. A resource whose properties did not
change is not called at all. ``needs_replacement`` runs while the worker prepares the
step, inside its transaction: it may read through the runtime (a software deployment
compares its config's inputs in the store) but must not write, and in an update preview
the runtime refuses every call, so answer as for an update in place when it does.

A type that takes an ``update_policy`` declares its keys in ``update_policy_schema``
(``Property`` objects, as for properties) and reads the typed policy, defaults filled, as
:attr:`update_policy` in any action. A policy must be known before anything runs
(parameters only); a change to the policy alone is stored with the template and calls
nothing, as in Heat.

Other actions
-------------
``suspend``, ``resume`` and ``check`` default to doing nothing and completing at once;
override the pair where the backend has such a thing. Set ``check_supported = True``
when ``handle_check`` really looks at the backend (raise if the thing is gone or
unhealthy): a stack check of types that do not is reported as not fully supported, as
in Heat. ``adopt`` takes over an existing thing from abandon data: the default records
the given physical id and private data and creates nothing.

Snapshot and restore
--------------------
A stack snapshot (``POST …/snapshots``) runs ``handle_snapshot()`` then
``check_snapshot_complete(token)`` on every resource, as any action; the default does
nothing. What the snapshot keeps of a resource is its entry in Heat's layout
(``resource_id``, ``resource_data``, its state): put what a restore will need in
:attr:`data` (an image or backup id) and it is kept, as Heat keeps what ``data_set``
wrote. A restore (``POST …/snapshots/<id>/restore``) is an update back to the
snapshot's template and parameters; before each resource's update is decided,
:meth:`handle_restore` gets that resource's entry and returns the properties to restore
it with (by default the template's, unchanged), as Heat's ``handle_restore`` returns a
changed definition. It may also set :attr:`data`, which the resource keeps if the
restore updates or recreates it (a RandomString takes back its value so). It runs while
the worker prepares the step, inside a transaction: pure, no runtime call (its runtime
refuses every one, as in :meth:`handle_signal`), no I/O.

Observing the backend: check and drift
--------------------------------------
A type whose backend can be read overrides :meth:`Resource.observe`: it returns the live
values of the properties it can read back, in the form the template gives them (None when
the physical resource is gone). Kiln calls it, outside any transaction, for a ``check``
(the resource fails the check if it is gone, and otherwise records the properties whose
live value differs from the template's as its *drift*, shown in its events and its
resource document) and for an update with ``converge`` (Heat's "observe reality"): drifted
properties count as changed, so the update puts them back. Keep it to a few read calls.

Attributes and references
-------------------------
``get_attribute(name)`` answers ``get_attr``; ``get_reference_id()`` answers
``get_resource`` (the physical id unless overridden). Both are called with the stored
state only and must not call the backend for long. ``get_attr: [r, name, path…]`` calls
``get_attribute_path(name, path)``, which by default reads into ``get_attribute(name)``;
a type whose path means more than an index (a group's ``resource.0``, then the member's
attribute) overrides it.

Signals
-------
``POST …/resources/<name>/signal`` delivers its JSON body to :meth:`handle_signal`, which
by default refuses it (Heat's 400 "signal is not supported for resource."). A type that
takes signals overrides it: it validates the body and returns the :class:`Signal` Kiln
stores with the resource, in arrival order, and describes in a ``SIGNAL`` event. It runs
in the API, inside the transaction that stores the signal, on an instance whose runtime
refuses every write: no I/O, no waiting. Signals are read back with
:meth:`Runtime.find_signalled_resource` (an ``OS::Heat::WaitCondition`` reads its
handle's). :meth:`Runtime.issue_signal_token` gives a secret that authorises that one URL
and nothing else, for whoever must send the signals. A type reads its own signals with
:meth:`Runtime.signals`. Kiln refuses signals to a resource being suspended or deleted,
as Heat does; a type that takes them then too sets :attr:`Resource.no_signal_actions`.

Software configs and deployments
--------------------------------
The tenant's software configs and deployments (Heat's ``/software_configs`` and
``/software_deployments`` APIs) are reached through :meth:`Runtime.software_configs`, a
:class:`SoftwareConfigStore`, in the worker only. Its documents have the API's keys
(``id``, ``name``, ``group``, ``config``, ``inputs``, ``outputs``, ``options``; a
deployment's ``config_id``, ``server_id``, ``input_values``, ``output_values``,
``action``, ``status``, ``status_reason``), so a type builds what Heat's would. An
attribute is read without the runtime's help: keep what ``get_attribute`` answers in
:attr:`data` (``OS::Heat::SoftwareConfig`` keeps its config there too).

Plugins import only ``engine.resources.base``, ``engine.schema``, ``engine.errors`` and
``engine.vocabulary`` (the actions).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import inspect
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, ClassVar, Protocol

from engine.errors import ResourceActionNotSupported
from engine.schema import SUPPORTED, Attribute, Property, SupportStatus
from engine.vocabulary import Action

Token = Any
"""Whatever ``handle_<action>`` returns; it must survive ``json.dumps``."""

# Plugin API since the first release: types outside this tree compare ``self.action``
# with these names imported from here. They are the vocabulary's own members (one
# vocabulary), re-exported so such a plugin keeps loading; new code imports ``Action``.
CREATE, UPDATE, DELETE, SUSPEND, RESUME, CHECK, ADOPT = (
    Action.CREATE, Action.UPDATE, Action.DELETE, Action.SUSPEND, Action.RESUME,
    Action.CHECK, Action.ADOPT)


@dataclasses.dataclass(frozen=True)
class Signal:
    """What :meth:`Resource.handle_signal` makes of one signal."""

    #: Kept with the resource (JSON), after the signals it took before.
    stored: Mapping[str, Any]
    #: Heat's ``handle_signal`` result: the ``SIGNAL`` event's reason is
    #: ``Signal: <summary>``; None gives Heat's generic text instead.
    summary: str | None = None


#: The query parameter of a signed signal URL that carries the token (the access log
#: masks it).
SIGNAL_TOKEN_PARAM = "signal_token"


@dataclasses.dataclass(frozen=True)
class IssuedSignalToken:
    """A new secret that authorises ``POST`` to one resource's signal URL, nothing else.

    Kiln keeps only its sha256, as for tenant tokens: the secret exists here once."""

    id: str
    secret: str = dataclasses.field(repr=False)  # never in a log line
    #: The absolute signal URL: ``<API>/v1/<tenant>/stacks/<stack>/<id>/resources/<name>/signal``.
    url: str
    #: The same URL signed: the secret in its query (:data:`SIGNAL_TOKEN_PARAM`), for a
    #: sender that can send no header (Heat's CFN and Swift TempURL signals).
    signed_url: str = dataclasses.field(default="", repr=False)
    #: Kiln's API for the stack's tenant, ``<API>/v1/<tenant>``, which the URL is under:
    #: an endpoint a client that takes one (heatclient) sends the signal through.
    auth_url: str = ""


class SoftwareConfigStore(Protocol):
    """The stack's tenant's software configs and deployments, as the API shows them;
    each call is a short transaction of its own. Configs are immutable: a change is a
    new config. A missing id reads as None."""

    def create_config(self, *, name: str | None, group: str | None, config: Any,
                      inputs: Sequence[Mapping[str, Any]],
                      outputs: Sequence[Mapping[str, Any]],
                      options: Mapping[str, Any] | None,
                      config_id: str | None = None) -> Mapping[str, Any]:
        """Store a config (``inputs`` and ``outputs`` in their persisted form) and return
        its document. Given ``config_id`` (a resumed create), an existing config with
        that id is returned as it is."""

    def get_config(self, config_id: str) -> Mapping[str, Any] | None: ...

    def delete_config(self, config_id: str) -> None:
        """Delete it if it exists; ``InvalidRestrictedAction`` while a deployment names
        it."""

    def create_deployment(self, deployment_id: str, *, config_id: str, server_id: str,
                          input_values: Mapping[str, Any] | None, action: str, status: str,
                          status_reason: str) -> Mapping[str, Any]:
        """Store a deployment (an existing one with the id is returned as it is)."""

    def get_deployment(self, deployment_id: str) -> Mapping[str, Any] | None: ...

    def update_deployment(self, deployment_id: str, changes: Mapping[str, Any]
                          ) -> Mapping[str, Any] | None:
        """Change the given fields (deployment keys: ``config_id``, ``input_values``,
        ``output_values``, ``action``, ``status``, ``status_reason``); the new document,
        or None when there is no such deployment."""

    def change_deployment(self, deployment_id: str,
                          change: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
                          ) -> Mapping[str, Any] | None:
        """Lock the deployment, call ``change`` with its document and apply the changes
        it returns (none for None), in one transaction: what ``change`` saw is what it
        changes, whoever else writes the deployment meanwhile (an agent's ``PUT``). The
        document after, or None when there is no such deployment."""

    def delete_deployment(self, deployment_id: str) -> None:
        """Delete it if it exists."""


@dataclasses.dataclass(frozen=True)
class SignalledResource:
    """Another resource of the stack, with the signals it has stored, oldest first."""

    name: str
    resource_type: type[Resource]
    signals: Sequence[Mapping[str, Any]]


def resource_key(stack_id: str, resource_name: str, row_id: int, generation: int = 0) -> str:
    """:attr:`Runtime.resource_key` of one generation of a stored resource, for the
    worker's runtime and for every read of the stored row alike, so that a name built
    from it (:meth:`Resource.physical_resource_name`) is the same in both. Each
    replacement is a new generation, so its stable name differs from the resource it
    replaces; generation 0 keeps the names of before updates existed."""
    return f"{stack_id}/{resource_name}/{row_id}" + (f"/{generation}" if generation else "")


class Runtime(Protocol):
    """What the worker gives a resource instance: identity, clock and persistence."""

    stack_id: str
    stack_name: str
    tenant_id: str
    #: Stable and unique for this resource of this stack, across workers and retries.
    resource_key: str

    def now(self) -> float:
        """Seconds since the epoch (injected so tests control time)."""

    def placement(self) -> Mapping[str, Any] | None:
        """Where a placement lifecycle plugin put this resource (``{"rack", "host"}``),
        or None when none placed it. Only in the worker."""

    def service(self, name: str) -> Any:
        """The process's shared service registered as ``name`` in
        ``kiln.resource_services`` (``"aws"``: the boto3 client factory); see
        ``engine.resources.shared_clients``. Only in the worker: an attribute read
        refuses it."""

    def record_physical_id(self, physical_id: str, data: Mapping[str, Any]) -> None:
        """Make the physical id and private data part of what is stored for the resource
        (the worker stores them with the step's token, before any waiting)."""

    def issue_signal_token(self) -> IssuedSignalToken:
        """A new token for this resource's signal URL, stored (hashed) in its own
        transaction. It stays valid until :meth:`revoke_signal_tokens`, or until the
        resource is gone; call it before :meth:`Resource.set_physical_id`, so a resumed
        create that finds a physical id does not issue a second one."""

    def revoke_signal_tokens(self) -> None:
        """Invalidate every token issued for this resource (a delete calls it)."""

    def find_signalled_resource(self, reference_id: str) -> SignalledResource | None:
        """Read-only: the resource of this stack whose physical id (``get_resource``) or
        name is ``reference_id``, with the signals it has stored so far; None when no
        resource of the stack that exists (created, being created, updated, resumed or
        checked) answers to it. Each call reads the database afresh."""

    def signals(self) -> Sequence[Mapping[str, Any]]:
        """What this resource's own signals stored (:meth:`Resource.handle_signal`),
        oldest first, read afresh. Only in the worker."""

    def signals_after(self, after: int | None) -> Sequence[tuple[int, Mapping[str, Any]]]:
        """(number, what it stored) of each of this resource's own signals after the one
        numbered ``after`` (every one for None), oldest first, read afresh: numbers grow
        in the order signals arrive, so a type that remembers the last it applied never
        skips one nor reads one twice. Only in the worker."""

    def software_configs(self) -> SoftwareConfigStore:
        """The tenant's software configs and deployments. Only in the worker."""


class Resource:
    """Base class of every resource type. Subclasses declare schemas as data."""

    properties_schema: ClassVar[Mapping[str, Property]] = {}
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {}
    #: The keys of the resource's ``update_policy`` (CFN ``UpdatePolicy``), as properties
    #: are declared; a template giving a type without one an update policy is refused.
    update_policy_schema: ClassVar[Mapping[str, Property]] = {}
    #: Accept and ignore properties that are not in the schema (``OS::Heat::None``).
    allow_unknown_properties: ClassVar[bool] = False
    #: Answer ``get_attr`` for any attribute name (None when unknown), as OS::Heat::None does.
    allow_unknown_attributes: ClassVar[bool] = False
    #: Heat's support status of the type, shown by ``GET /resource_types/{type}`` and
    #: matched by the ``support_status`` and ``version`` filters of ``GET /resource_types``:
    #: one of ``engine.schema``'s SUPPORTED, DEPRECATED, UNSUPPORTED or UNKNOWN (HIDDEN,
    #: Heat's way to leave a type out of the catalogue, is refused: uninstall it instead).
    support_status: ClassVar[str] = SUPPORTED
    #: The Heat version (``"5.0.0"``, ``"2014.1"``) since which the type has had
    #: :attr:`support_status`; None, as in Heat, for a type that does not say.
    support_version: ClassVar[str | None] = None
    #: Why the type has its status, e.g. ``"Use OS::Heat::Value instead."``.
    support_message: ClassVar[str | None] = None
    #: The status before this one, e.g. ``SupportStatus(version="5.0.0")`` for a type
    #: deprecated later.
    support_previous_status: ClassVar[SupportStatus | None] = None
    #: True when ``handle_check`` really inspects the backend (see the module docs).
    check_supported: ClassVar[bool] = False
    #: The actions during which the resource refuses signals (Heat's ``no_signal_actions``).
    no_signal_actions: ClassVar[tuple[str, ...]] = (Action.SUSPEND, Action.DELETE)
    #: The keys of :attr:`data` whose values are secrets (a signal token): masked,
    #: wherever they appear, in every view of the resource's data (abandon, export,
    #: snapshots). The rows keep them; a type adopted from masked data makes new ones.
    secret_data: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        name: str,
        properties: Mapping[str, Any],
        runtime: Runtime,
        *,
        physical_id: str | None = None,
        data: MutableMapping[str, Any] | None = None,
        update_policy: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.properties = properties
        self.runtime = runtime
        #: The template's update policy for this resource, typed against
        #: :attr:`update_policy_schema` with its defaults; the new template's in an update.
        self.update_policy: Mapping[str, Any] = update_policy or {}
        self._physical_id = physical_id
        self.data: MutableMapping[str, Any] = data if data is not None else {}

    # --- identity ---------------------------------------------------------------------

    @property
    def physical_id(self) -> str | None:
        return self._physical_id

    def set_physical_id(self, physical_id: str) -> None:
        """Record the backend's id now, before any waiting (see the module docs)."""
        self._physical_id = physical_id
        self.runtime.record_physical_id(physical_id, dict(self.data))

    def physical_resource_name(self) -> str:
        """A name in Heat's form ``<stack>-<resource>-<12 base32 chars>``.

        The suffix derives from :attr:`Runtime.resource_key`, so every call for the same
        resource gives the same name: a resumed create can look for what it made.
        """
        digest = hashlib.sha256(self.runtime.resource_key.encode()).digest()
        suffix = base64.b32encode(digest).decode().lower()[:12]
        return f"{self.runtime.stack_name}-{self.name}-{suffix}"

    # --- validation -------------------------------------------------------------------

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        """Cross-property checks beyond the schema; raise ``StackValidationFailed``.

        Pure: typed properties in, nothing else. Kiln calls it when a stack is created if
        every property is known from the template and parameters (the tenant gets a 400),
        and in the worker before the create when some come from other resources.
        """

    def validate(self) -> None:
        type(self).validate_properties(self.properties)

    # --- actions: start, then poll --------------------------------------------------

    def handle_create(self) -> Token:
        return None

    def check_create_complete(self, token: Token) -> bool:
        return True

    def handle_delete(self) -> Token:
        return None

    def check_delete_complete(self, token: Token) -> bool:
        return True

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        """True when changing ``prop_diff`` cannot be done in place."""
        schema = type(self).properties_schema
        return any(name not in schema or not schema[name].update_allowed
                   for name in prop_diff)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        """Change the resource in place to :attr:`properties` (``prop_diff`` changed)."""
        return None

    def check_update_complete(self, token: Token) -> bool:
        return True

    def next_check_in(self, token: Token) -> float | None:
        """Seconds until ``check_<action>_complete(token)`` can answer True, when the
        type knows it (a timer it set itself): Kiln looks again at that moment instead of
        backing off. None, the default, leaves the backing off to Kiln."""
        return None

    def handle_suspend(self) -> Token:
        return None

    def check_suspend_complete(self, token: Token) -> bool:
        return True

    def handle_resume(self) -> Token:
        return None

    def check_resume_complete(self, token: Token) -> bool:
        return True

    def handle_check(self) -> Token:
        return None

    def observe(self) -> Mapping[str, Any] | None:
        """The backend's live values of the properties it can report (only those), or
        None when the physical resource no longer exists. See "Observing the backend"."""
        raise ResourceActionNotSupported(action="Observe")

    @classmethod
    def observes(cls) -> bool:
        """True when the type reads its backend's state (overrides :meth:`observe`)."""
        return cls.observe is not Resource.observe

    def check_check_complete(self, token: Token) -> bool:
        return True

    def handle_adopt(self, resource_id: str | None, resource_data: Mapping[str, Any]) -> Token:
        """Take over ``resource_id`` with its private ``resource_data`` (abandon data)."""
        self.data.update(resource_data)
        if resource_id:
            self.set_physical_id(resource_id)
        return None

    def check_adopt_complete(self, token: Token) -> bool:
        return True

    # --- snapshot and restore (see the module docs) -------------------------------------

    def handle_snapshot(self) -> Token:
        """Start keeping what a restore needs (put its ids in :attr:`data`)."""
        return None

    def check_snapshot_complete(self, token: Token) -> bool:
        return True

    def handle_restore(self, snapshot: Mapping[str, Any]) -> Mapping[str, Any]:
        """The properties to restore the resource with: ``snapshot`` is its entry in the
        snapshot's data, :attr:`properties` the snapshot template's (evaluated now).
        Pure, as :meth:`handle_signal`. Default: the template's, unchanged."""
        return self.properties

    # --- signals ------------------------------------------------------------------------

    def handle_signal(self, details: Mapping[str, Any] | None,
                      received: Sequence[Mapping[str, Any]]) -> Signal:
        """Accept a signal: ``details`` is the request's JSON object (None without one),
        ``received`` what earlier signals stored, oldest first. Return what to store;
        raise a ``KilnError`` (a 400 ``Invalid`` for a bad body) to refuse it. Pure: no
        runtime call, no I/O (see the module docs). Default: the type takes no signal."""
        raise ResourceActionNotSupported(action="signal")

    # --- reads ------------------------------------------------------------------------

    def get_attribute(self, name: str) -> Any:
        """Value of attribute ``name``; None when it is not known yet."""
        return None

    def get_attribute_path(self, name: str, path: Sequence[Any]) -> Any:
        """``get_attr: [resource, name, *path]``: attribute ``name``, then each item of
        ``path`` into it (:func:`select_attribute`). Heat hands the path to the
        resource, so a type can read it itself, as a group reads ``resource.0`` and
        then the member's attribute; others keep this default."""
        return select_attribute(self.get_attribute(name), path)

    def get_reference_id(self) -> str | None:
        # Heat's default (resource.py): the physical id once there is one, else the name.
        return self.physical_id if self.physical_id is not None else self.name

    def all_attributes(self) -> dict[str, Any]:
        """Every declared attribute (``get_attr: [name]``), as Heat leaves out ``show``."""
        return {name: self.get_attribute(name) for name in self.attributes_schema
                if name != "show"}

    @classmethod
    def describe(cls) -> str:
        """The first paragraph of the class docstring, for the resource-type API; Heat's
        words for a class without one."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        return doc.split("\n\n", 1)[0].replace("\n", " ") or "No description available"

    @classmethod
    def support(cls) -> SupportStatus:
        """The support status the ``support_*`` class attributes declare."""
        return SupportStatus(cls.support_status, cls.support_version, cls.support_message,
                             cls.support_previous_status)


def action_methods(
    resource: Resource, action: str, adopt: Mapping[str, Any] | None = None,
    prop_diff: Mapping[str, Any] | None = None,
) -> tuple[Callable[[], Token], Callable[[Token], bool]]:
    """The (start, poll) pair of ``action``; explicit so that it can be grepped and typed.
    ``adopt`` is the resource's entry in the abandon data, for ADOPT; ``prop_diff`` the
    changed properties, for UPDATE."""
    if action == Action.ADOPT:
        entry = adopt or {}
        return (lambda: resource.handle_adopt(entry.get("resource_id"),
                                              entry.get("resource_data") or {}),
                resource.check_adopt_complete)
    if action == Action.CREATE:
        return resource.handle_create, resource.check_create_complete
    if action == Action.DELETE:
        return resource.handle_delete, resource.check_delete_complete
    if action == Action.UPDATE:
        diff = dict(prop_diff or {})
        return (lambda: resource.handle_update(diff)), resource.check_update_complete
    if action == Action.SUSPEND:
        return resource.handle_suspend, resource.check_suspend_complete
    if action == Action.RESUME:
        return resource.handle_resume, resource.check_resume_complete
    if action == Action.CHECK:
        return resource.handle_check, resource.check_check_complete
    if action == Action.SNAPSHOT:
        return resource.handle_snapshot, resource.check_snapshot_complete
    raise ValueError(f"unknown resource action {action}")


def select_attribute(value: Any, path: Sequence[Any]) -> Any:
    """``value[path[0]][path[1]]…``: a map by key, a list (or a string) by integer
    index; None where a step leads nowhere, as Heat's ``select_from_attribute``."""
    for key in path:
        if not isinstance(value, (Mapping, Sequence)) or not isinstance(key, (str, int)):
            return None
        try:
            value = value[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return None
    return value


#: The longest wait a type makes from a tenant's number of seconds: over three centuries,
#: past any operation's deadline (which ends the wait first), and small enough that the
#: time it ends at is a finite float and a datetime.
MAX_WAIT_SECONDS = 1e10


def bounded_wait(seconds: float) -> float:
    """A tenant's wait in seconds as a float a deadline can be made from: NaN, the
    infinities and anything past ``MAX_WAIT_SECONDS`` (an int past float's range too)
    wait ``MAX_WAIT_SECONDS``, as long as the operation lets them; Heat waits for them
    until the operation times out."""
    return float(seconds) if seconds <= MAX_WAIT_SECONDS else MAX_WAIT_SECONDS
