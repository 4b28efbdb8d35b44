"""The one exception hierarchy of Kiln.

Every error a tenant or operator can cause is a ``KilnError``. Each carries a message written
for the person who will read it, an optional template location (file, line, path) and
structured details. The categories below map one-to-one onto HTTP semantics; the only
place that turns them into HTTP is ``engine.api.errors``, and the only place that turns
them into exit codes is ``engine.cli.app``. Every subclass, wherever it is defined, is drawn
here (``tests/unit/test_errors.py`` checks it)::

    KilnError
    ├── NotFound ............... 404
    │   ├── EntityNotFound
    │   │   └── ResourceNotFound
    │   ├── OutputNotFound ..... Heat's type: NotFound (``api_type``)
    │   ├── GroupMemberNotFound
    │   ├── SoftwareConfigNotFound  Heat's type: NotFound
    │   ├── SoftwareDeploymentNotFound  Heat's type: NotFound
    │   ├── SnapshotNotFound
    │   ├── NoEventsFound
    │   ├── EventNotFound
    │   ├── ResourceNotAvailable
    │   ├── NoApprovalFound .... nothing waits at an approval gate
    │   └── ResourceMissing .... a step's resource is not there to act on (a reason)
    ├── Conflict ............... 409
    │   ├── StackExists
    │   ├── ActionInProgress
    │   ├── StackHeld .......... kiln-manage: a live worker holds the stack
    │   ├── NothingToCancel .... kiln-manage
    │   ├── WorkerAlive ........ kiln-manage
    │   ├── TenantNotEmpty ..... kiln-manage
    │   ├── InvalidRestrictedAction .. a software config a deployment names
    │   └── NoApprovalAwaited .. an approval gate decided already, or none
    ├── Invalid ................ 400
    │   ├── StackValidationFailed
    │   │   ├── InvalidTemplateVersion
    │   │   │   └── AmbiguousTemplateVersion
    │   │   ├── InvalidTemplateReference
    │   │   ├── InvalidTemplateAttribute
    │   │   ├── CircularDependency
    │   │   ├── ResourceTypeNotFound
    │   │   └── BudgetExceeded (engine.budget)
    │   │       ├── ValueTooLarge
    │   │       ├── TooManyItems
    │   │       └── EvaluationTooLong
    │   ├── UserParameterMissing
    │   ├── UnknownUserParameter
    │   ├── ImmutableParameterModified
    │   ├── InvalidFilter
    │   ├── BadRequest
    │   ├── RequestLimitExceeded  (every size and count limit; 400, as in Heat)
    │   ├── PhysicalResourceIDAmbiguity
    │   ├── NotSupported
    │   ├── ResourceActionNotSupported
    │   ├── ResourceActionRestricted .. an update or replacement the environment's
    │   │                          ``restricted_actions`` forbid (a step's failure)
    │   ├── InvalidBreakPointHook .. a hook no breakpoint has, or one not set
    │   ├── InvalidRestrictedActionType .. ``restricted_actions`` naming no action
    │   ├── LifecycleDenied .... a lifecycle plugin's dry run would fail the operation
    │   └── AmbiguousName ...... kiln-manage: a name or id prefix matches several
    ├── Unauthorized ........... 401
    │   └── AuthenticationRequired
    ├── Forbidden .............. 403
    │   ├── InvalidTenant
    │   ├── GlobalTenantForbidden
    │   ├── ServicesForbidden
    │   ├── ApprovalForbidden
    │   └── OperatorViewForbidden .. every tenant's operations or plugin calls
    ├── Unavailable ............ 503
    │   ├── DatabaseUnavailable
    │   ├── SchemaBehind
    │   └── BacklogFull ........ too many operations wait for a worker (Retry-After)
    ├── StartupFailed .......... never reaches HTTP: the process refuses to start
    │   ├── DatabaseMissing .... no SQLite file where the configuration points
    │   ├── PluginLoadFailed
    │   ├── PluginOrderInvalid
    │   ├── PluginConfigInvalid
    │   └── RulesFileError (plugins.lifecycle.policy.rules_file: policy and approval rules)
    ├── InternalError .......... never raised to a request: why a stack or a resource
    │                            failed when Kiln kept failing on it (engine.worker.poison)
    └── BackendFailed .......... 502: a resource's backend (a cloud API) said no
        ├── BackendResourceGone
        └── BackendThrottled

``BackendFailed`` is what resource plugins raise for their backend's errors, translated at
one boundary per backend; it mostly ends up as a resource's status reason.

Messages are formatted from a single class-level template with keyword arguments, so one
class always reads the same way. Nothing here knows about HTTP or SQL.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar


@dataclasses.dataclass(frozen=True)
class Location:
    """Where in a tenant's document an error was found.

    ``path`` is the dotted path inside the document (``resources.web.properties.size``);
    ``line`` is 1-based and known only when the document arrived as text.
    """

    path: str = ""
    line: int | None = None
    file: str = "template"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else ""
        return " ".join(part for part in (where, self.path) if part)


class KilnError(Exception):
    """Base of every error Kiln raises on purpose."""

    msg_fmt: ClassVar[str] = "An unknown error occurred."
    #: The error's type in an API body and in a resource's failure reason (``<type>:
    #: resources.<name>: <message>``), when Heat's is not the class's name (where Heat
    #: raises its generic ``NotFound``, Kiln has a class of its own).
    api_type: ClassVar[str | None] = None

    def __init__(self, location: Location | None = None, **details: Any) -> None:
        self.location = location
        self.details = details
        try:
            self.message = self.msg_fmt.format(**details)
        except (KeyError, IndexError):  # a programming slip must not hide the real error
            self.message = f"{self.msg_fmt} {details!r}"
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.location is not None and str(self.location):
            return f"{self.location}: {self.message}"
        return self.message

    def at(self, location: Location) -> KilnError:
        """Return the same error pinned to ``location`` (keeps an existing, finer one)."""
        if self.location is None:
            self.location = location
            self.args = (str(self),)
        return self


# --- categories -----------------------------------------------------------------------


class NotFound(KilnError):
    msg_fmt = "{what} could not be found."


class Conflict(KilnError):
    msg_fmt = "{reason}"


class Invalid(KilnError):
    msg_fmt = "{reason}"


class Unauthorized(KilnError):
    msg_fmt = "{reason}"


class Forbidden(KilnError):
    msg_fmt = "{reason}"


class Unavailable(KilnError):
    msg_fmt = "{reason}"

    @property
    def retry_after(self) -> int | None:
        """Seconds after which the request may well succeed (``Retry-After``), when an
        error knows them (its ``retry_after`` detail)."""
        value = self.details.get("retry_after")
        return value if isinstance(value, int) else None


class StartupFailed(KilnError):
    msg_fmt = "{reason}"


class InternalError(KilnError):
    """Kiln itself kept failing on a step or an operation phase (a bug, or a worker that
    died on it); the message says where the operator finds the cause. ``tries``: "3
    tries"; ``subject``: what the engine log names, with its request."""

    msg_fmt = ("Kiln failed unexpectedly (an internal error, {tries}); the operator can "
               "find {subject} in the engine log")


class BackendFailed(KilnError):
    """A backend refused or failed a call; ``code`` is the backend's own error code."""

    msg_fmt = "{service} {operation} failed: {code}: {reason}"

    @property
    def code(self) -> str:
        return str(self.details.get("code", ""))


class BackendResourceGone(BackendFailed):
    """The physical resource a call named does not exist (any more)."""


class BackendThrottled(BackendFailed):
    """The backend still refused for its rate limit after the SDK's own back-off."""


# --- concrete errors ------------------------------------------------------------------


class EntityNotFound(NotFound):
    msg_fmt = "The {entity} ({name}) could not be found."


class ResourceNotFound(EntityNotFound):
    msg_fmt = "The Resource ({resource_name}) could not be found in Stack {stack_name}."


class OutputNotFound(NotFound):
    """``GET …/outputs/<key>`` of a key the stack's template has not (Heat's
    ``show_output``: its words, its type)."""

    msg_fmt = "Specified output key {key} not found."
    api_type = "NotFound"


class GroupMemberNotFound(NotFound):
    """``get_attr`` of a group member the group does not have (Heat's words)."""

    msg_fmt = "Member '{member}' not found in group resource '{group}'."


class SoftwareConfigNotFound(NotFound):
    """No software config of the tenant's has this id (Heat's words; Heat's type is
    ``NotFound``)."""

    msg_fmt = "Software config with id {id} not found"
    api_type = "NotFound"


class SoftwareDeploymentNotFound(NotFound):
    """No software deployment of the tenant's has this id (Heat's words; Heat's type is
    ``NotFound``)."""

    msg_fmt = "Deployment with id {id} not found"
    api_type = "NotFound"


class InvalidRestrictedAction(Conflict):
    """Deleting a software config a deployment still names (Heat's words; Heat answers
    500, Kiln 409: the tenant can delete the deployment first)."""

    msg_fmt = "Software config with id {id} can not be deleted as it is referenced."


class StackExists(Conflict):
    msg_fmt = "The Stack ({stack_name}) already exists."


class ActionInProgress(Conflict):
    msg_fmt = "Stack {stack_name} already has an action ({action}) in progress."


class StackValidationFailed(Invalid):
    msg_fmt = "{reason}"


class InvalidTemplateVersion(StackValidationFailed):
    msg_fmt = (
        'The template version is invalid: "{given}". "{key}" should be one of: {known}'
    )


class AmbiguousTemplateVersion(InvalidTemplateVersion):
    msg_fmt = "The template version is invalid: Ambiguous versions ({keys})"


class InvalidTemplateReference(StackValidationFailed):
    msg_fmt = 'The specified reference "{name}" (in {referenced_from}) is incorrect.'


class InvalidTemplateAttribute(StackValidationFailed):
    msg_fmt = "The Referenced Attribute ({resource} {key}) is incorrect."


class CircularDependency(StackValidationFailed):
    msg_fmt = "Circular Dependency Found: {cycle}"  # Heat's words (dependencies.py)


class ResourceTypeNotFound(StackValidationFailed):
    msg_fmt = "The Resource Type ({type_name}) could not be found."


class BudgetExceeded(StackValidationFailed):
    """Evaluating the template would cost more than its budget (``engine.budget``): a
    400 when the API evaluates, the reason of a FAILED resource in the worker."""


class ValueTooLarge(BudgetExceeded):
    msg_fmt = ('"{function}" would produce a value larger than {limit} characters '
               "([template] max_value_chars).")


class TooManyItems(BudgetExceeded):
    msg_fmt = ('"{function}" would produce {count} items, more than {limit} '
               "([template] max_function_items).")


class EvaluationTooLong(BudgetExceeded):
    msg_fmt = ("{what} took too long: the regular expressions, yaql and str_replace of "
               "one evaluation may take {seconds} s in all ([template] "
               "evaluation_timeout_seconds).")


class UserParameterMissing(Invalid):
    msg_fmt = "The Parameter ({key}) was not provided."


class UnknownUserParameter(Invalid):
    msg_fmt = "The Parameter ({key}) was not defined in template."


class ImmutableParameterModified(Invalid):
    msg_fmt = "The following parameters are immutable and may not be updated: {keys}"


class InvalidFilter(Invalid):
    msg_fmt = "Invalid filter parameters {keys}"


class BadRequest(Invalid):
    msg_fmt = "{reason}"


class RequestLimitExceeded(Invalid):
    msg_fmt = "Request limit exceeded: {reason}"


class AuthenticationRequired(Unauthorized):
    msg_fmt = "Authentication required: {reason}"


class InvalidTenant(Forbidden):
    msg_fmt = "Searching Tenant {target} from Tenant {actual} forbidden."


class DatabaseUnavailable(Unavailable):
    msg_fmt = "The database is unavailable: {reason}"


class SchemaBehind(Unavailable):
    msg_fmt = (
        "The database schema is at {current}, but this Kiln needs {head}. "
        "Run `kiln-manage db upgrade` first."
    )


class BacklogFull(Unavailable):
    """A write that would queue an operation while ``[api] max_pending_operations`` of
    them already wait for a worker (``engine.services.backlog``). No count: how busy the
    other tenants keep the workers is not a tenant's to read."""

    msg_fmt = ("Kiln is busy: the most operations it lets wait for a worker ({limit}, "
               "[api] max_pending_operations) are waiting. Nothing was changed; try "
               "again in {retry_after} seconds.")


class DatabaseMissing(StartupFailed):
    """A SQLite database that does not exist: opening it would create an empty one, and
    split the operator's data in two (only ``kiln-manage db upgrade`` creates it)."""

    msg_fmt = (
        "There is no Kiln database at {path} (config files read: {files}). Run "
        "`kiln-manage db upgrade` to create it there, or set [DEFAULT] state_path or "
        "[database] connection (in ~/.kiln/kiln.conf, /etc/kiln/kiln.conf or a "
        "--config-file, or as OS_DEFAULT__STATE_PATH) to use the one you have."
    )


class PluginLoadFailed(StartupFailed):
    msg_fmt = "Plugin {name} in namespace {namespace} could not be loaded: {reason}"


class PluginOrderInvalid(StartupFailed):
    msg_fmt = "Lifecycle plugins cannot be ordered: {reason}"


class PluginConfigInvalid(StartupFailed):
    msg_fmt = "Lifecycle plugin configuration [lifecycle_plugins] {option}: {reason}"


# --- reads, mark-unhealthy and signals (Heat's names and texts) ----------------------


class GlobalTenantForbidden(Forbidden):
    msg_fmt = "Listing the stacks of every tenant (global_tenant) needs an admin token."


class ServicesForbidden(Forbidden):
    msg_fmt = "Listing the engine services needs an admin token."


class ApprovalForbidden(Forbidden):
    msg_fmt = ("Approving or rejecting an operation needs an admin token of the stack's "
               "tenant (or kiln-manage operation approve|reject).")


class OperatorViewForbidden(Forbidden):
    msg_fmt = "Listing {what} of every tenant needs an admin token."


class NoApprovalAwaited(Conflict):
    msg_fmt = "No operation of stack {stack} is waiting for approval."


class NoApprovalFound(NotFound):
    msg_fmt = "No operation of stack {stack} is waiting for approval."


class SnapshotNotFound(NotFound):
    """Heat's two answers: ``snapshot`` is no snapshot of the tenant's ("Snapshot with id
    <id> not found"), or is one of another of its stacks (given ``stack``)."""

    msg_fmt = "The Snapshot ({snapshot}) for Stack ({stack}) could not be found."

    def __init__(self, location: Location | None = None, **details: Any) -> None:
        super().__init__(location, **details)
        if "stack" not in details:
            self.message = f"Snapshot with id {details['snapshot']} not found"
            self.args = (str(self),)


class NoEventsFound(NotFound):
    msg_fmt = "No events found for resource {resource_name}"


class EventNotFound(NotFound):
    msg_fmt = "No event {event_id} found"


class ResourceNotAvailable(NotFound):
    msg_fmt = "The Resource ({resource_name}) is not available."


class PhysicalResourceIDAmbiguity(Invalid):
    msg_fmt = "Multiple resources were found with the physical ID ({phys_id})."


class NotSupported(Invalid):
    """Heat's ``<feature> is not supported.``, or, given ``reason`` instead of ``feature``,
    a whole sentence of Kiln's where Heat's shape does not fit (a drift that cannot be put
    back). Either way the class name starts the reason tenants read."""

    msg_fmt = "{feature} is not supported."

    def __init__(self, location: Location | None = None, **details: Any) -> None:
        super().__init__(location, **details)
        if "feature" not in details:
            self.message = str(details["reason"])
            self.args = (str(self),)


class ResourceActionNotSupported(Invalid):
    msg_fmt = "{action} is not supported for resource."


class InvalidBreakPointHook(Invalid):
    """Heat's: an environment's ``hooks`` that name no hook type, or a signal's
    ``unset_hook`` that names none or one not set on the resource."""

    msg_fmt = "{message}"


class ResourceActionRestricted(Invalid):
    """Heat's: an update step would change its resource in place (``update``) or replace
    it (``replace``) and the stack's environment restricts that action for the resource
    (``resource_registry.resources.<name>.restricted_actions``). Never raised to a
    request: it is the failure of the step (and so of the update)."""

    msg_fmt = "{action} is restricted for resource."


class InvalidRestrictedActionType(Invalid):
    """Heat's ``InvalidRestrictedAction`` for an environment's ``restricted_actions``
    that name no restricted action (Heat answers 500, Kiln 400: it is the request's
    fault). Kiln's ``InvalidRestrictedAction`` is the software-config conflict that
    shares Heat's name."""

    api_type = "InvalidRestrictedAction"
    msg_fmt = "{message}"


class LifecycleDenied(Invalid):
    """A dry run (validate, preview, update preview, and the door of a create, adopt or
    update, which then stores nothing) in which a lifecycle plugin's verdict would fail
    the operation; ``refusals`` names each such plugin with its message.

    400, as Heat answers a template that fails validation or passes a limit: the refusal
    is of this stack's content (a policy rule, a quota, a placement), and another template
    from the same tenant may pass. A 403 would tell the tenant their token lacks a role,
    and a plugin that broke or timed out refuses nothing on authority. The error type
    tells a refusal from a bad template."""

    msg_fmt = "{refusals}"


# --- why a step fails (a resource's status reason, never an HTTP answer) --------------


class ResourceMissing(NotFound):
    """The resource a step acts on is not there: never created, absent from the adopt
    data, or gone from its backend. The class name starts the reason tenants read."""

    msg_fmt = "{reason}"


# --- the operator's CLI (kiln-manage) -------------------------------------------------


class AmbiguousName(Invalid):
    msg_fmt = "{kind} {name} is ambiguous: it matches {choices}; {hint}."


class StackHeld(Conflict):
    msg_fmt = ("Stack {stack} is being worked on by live worker {workers}; stop it or "
               "cancel the operation first, or reset with --force.")


class NothingToCancel(Conflict):
    msg_fmt = "Operation {id} has already finished ({state}); there is nothing to cancel."


class WorkerAlive(Conflict):
    msg_fmt = ("Worker {id} on {host} (pid {pid}) is alive; only a dead worker can be "
               "forgotten.")


class TenantNotEmpty(Conflict):
    msg_fmt = "Tenant {name} still has {count} stacks; delete them first."
