"""ORM tables. Status columns hold Heat's words verbatim (``CREATE``, ``IN_PROGRESS``)."""

from __future__ import annotations

import datetime
from typing import Any, Literal, NotRequired, TypedDict

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, validates

from engine.db.base import Base, JSONType

_ACTIVE = text("deleted_at IS NULL")
_UNFINISHED = text("finished_at IS NULL")


class ReplacedResource(TypedDict):
    """The physical resource an update replaced, as it was before the replacement."""

    type: str
    physical_id: str | None
    properties: dict[str, Any] | None
    data: dict[str, Any]
    generation: int  # its signals and signal tokens are this generation's


class PropertyDrift(TypedDict):
    """One property a check found different from the template (values masked)."""

    expected: Any
    actual: Any


class Tenant(Base):
    __tablename__ = "tenants"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    created_at: Mapped[datetime.datetime]


class Token(Base):
    __tablename__ = "tokens"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    role: Mapped[str] = mapped_column(String(16))
    # NOTE: sha256 of a 256-bit random secret. A slow KDF buys nothing against guessing
    # a random secret of that size and would cost every request; see specs/tenants-and-tokens.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime.datetime]
    last_used_at: Mapped[datetime.datetime | None]
    revoked_at: Mapped[datetime.datetime | None]
    expires_at: Mapped[datetime.datetime | None]  # None: lives until revoked


class Stack(Base):
    __tablename__ = "stacks"
    __table_args__ = (
        # Names are unique per tenant among live stacks only; deleted names can be reused.
        Index("uq_stacks_tenant_id_name_live", "tenant_id", "name", unique=True,
              sqlite_where=_ACTIVE, postgresql_where=_ACTIVE),
    )
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    status_reason: Mapped[str] = mapped_column(Text, default="")
    description: Mapped[str] = mapped_column(Text, default="")
    template: Mapped[dict[str, Any]] = mapped_column(JSONType)
    parameters: Mapped[dict[str, Any]] = mapped_column(JSONType)
    environment: Mapped[dict[str, Any]] = mapped_column(JSONType)
    files: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # Resolved when an operation finishes (``engine.resources.outputs.StackOutput``
    # each); null while none has. The API resolves them afresh on each read; these are
    # what a parent's nested-stack resource copies, and what shows when the template
    # no longer builds.
    outputs: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    tags: Mapped[Any] = mapped_column(JSONType)
    disable_rollback: Mapped[bool] = mapped_column(Boolean, default=True)
    timeout_mins: Mapped[int | None] = mapped_column(Integer)
    owner: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime.datetime]
    updated_at: Mapped[datetime.datetime | None]
    deleted_at: Mapped[datetime.datetime | None] = mapped_column(index=True)
    # A nested stack: the stack and the resource in it that made this one. No foreign
    # key: rows of deleted stacks are kept, and a purge may take a parent first.
    owner_id: Mapped[str | None] = mapped_column(String(36), index=True)
    parent_resource: Mapped[str | None] = mapped_column(String(255))
    nested_depth: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # What ``resource_facade`` gives in a nested stack: the owning resource's metadata,
    # deletion_policy and update_policy.
    facade: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # The environment's ``event_sinks`` (null: none), kept by ``_sinks_follow`` whenever
    # the environment is set: every transaction that writes events asks whether their
    # stack has sinks, and this small column answers with the row a worker loads anyway,
    # where the environment is a large one it defers (engine.db.event_outbox).
    event_sinks: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)

    @validates("environment")
    def _sinks_follow(self, _key: str, environment: Any) -> Any:
        sinks = environment.get("event_sinks") if isinstance(environment, dict) else None
        self.event_sinks = [dict(sink) for sink in sinks] if sinks else None
        return environment


class Resource(Base):
    __tablename__ = "resources"
    __table_args__ = (UniqueConstraint("stack_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    stack_id: Mapped[str] = mapped_column(ForeignKey("stacks.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    type: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    status_reason: Mapped[str] = mapped_column(Text, default="")
    physical_id: Mapped[str | None] = mapped_column(String(255), index=True)
    properties: Mapped[Any | None] = mapped_column(JSONType)
    data: Mapped[dict[str, Any]] = mapped_column(JSONType)
    requires: Mapped[Any] = mapped_column(JSONType)
    # The physical resource an update replaced, kept until its dependents have moved to
    # the replacement (then deleted) or until a rollback swaps it back.
    replaced: Mapped[ReplacedResource | None] = mapped_column(JSONType)
    # Bumped by each replacement, so the replacement's stable physical name differs.
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Delete | Retain (the template's deletion_policy when the resource was last written)
    deletion_policy: Mapped[str] = mapped_column(String(16), default="Delete",
                                                 server_default="Delete")
    # What the last check (or converging update) observed to differ from the template,
    # by property; {} when nothing did, null when never observed.
    drift: Mapped[dict[str, PropertyDrift] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime.datetime]
    updated_at: Mapped[datetime.datetime | None]


class ResourceSignal(Base):
    """One signal a resource took, as its type's ``handle_signal`` stored it.

    Signals are rows of their own, never part of ``resources``: the API inserts them while
    a worker may be writing the resource row, and an insert cannot overwrite what the
    worker writes (nor be overwritten by it). ``id`` is the arrival order.
    """

    __tablename__ = "resource_signals"
    __table_args__ = (Index("ix_resource_signals_resource_id_generation", "resource_id",
                            "generation"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    # The resource's generation when signalled: a replacement starts with no signals.
    generation: Mapped[int] = mapped_column(Integer)
    details: Mapped[Any] = mapped_column(JSONType)
    created_at: Mapped[datetime.datetime]


class SignalToken(Base):
    """A secret that authorises signals to one resource (one generation of it) only.

    Issued by the resource (``Runtime.issue_signal_token``), gone with it. Not a row of
    ``tokens``: those act on a whole tenant, on every route."""

    __tablename__ = "signal_tokens"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"),
                                             index=True)
    generation: Mapped[int] = mapped_column(Integer)
    # NOTE: sha256 of a 256-bit random secret, as tokens.token_hash (same reasons).
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime.datetime]


class ResourceHook(Base):
    """A breakpoint a step reached (``engine.db.hooks``): the step is parked until a
    signal's ``unset_hook`` clears it (``cleared_at``). Set while ``cleared_at`` is NULL,
    which is Heat's ``has_hook``.

    A row of its own, as a signal is: the API clears it while a worker may be writing
    the resource row. Keyed by the step too, so a step taken up again knows which of its
    hooks it has passed."""

    __tablename__ = "resource_hooks"
    __table_args__ = (UniqueConstraint("step_id", "hook"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    step_id: Mapped[int] = mapped_column(ForeignKey("steps.id", ondelete="CASCADE"))
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"),
                                             index=True)
    hook: Mapped[str] = mapped_column(String(16))
    reached_at: Mapped[datetime.datetime]
    cleared_at: Mapped[datetime.datetime | None]


class SoftwareConfig(Base):
    """An immutable software config (Heat's ``software_config``), the tenant's own:
    written by ``POST /software_configs`` and by the config resource types, read by the
    deployments that name it (``engine/db/software_configs.py``)."""

    __tablename__ = "software_configs"
    __table_args__ = (Index("ix_software_configs_tenant_id_created_at", "tenant_id",
                            "created_at", "id"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str | None] = mapped_column(String(255))
    group: Mapped[str | None] = mapped_column(String(255))
    # As Heat keeps it: {"config", "inputs", "outputs", "options"}.
    config: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime.datetime]


class SoftwareDeployment(Base):
    """One config deployed to one server (Heat's ``software_deployment``): its state and
    the outputs the server signalled. A config a deployment names cannot be deleted."""

    __tablename__ = "software_deployments"
    __table_args__ = (Index("ix_software_deployments_tenant_id_server_id", "tenant_id",
                            "server_id"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    config_id: Mapped[str] = mapped_column(ForeignKey("software_configs.id"), index=True)
    server_id: Mapped[str] = mapped_column(String(255))
    input_values: Mapped[Any | None] = mapped_column(JSONType)
    output_values: Mapped[Any | None] = mapped_column(JSONType)
    action: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str | None] = mapped_column(String(255))
    status_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime.datetime]
    updated_at: Mapped[datetime.datetime | None]


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (Index("ix_events_stack_id_seq", "stack_id", "seq"),)
    # NOTE: ``seq`` gives events a total order for markers; ``id`` is the public uuid.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(36), unique=True)
    stack_id: Mapped[str] = mapped_column(ForeignKey("stacks.id", ondelete="CASCADE"))
    resource_name: Mapped[str] = mapped_column(String(255))
    physical_resource_id: Mapped[str] = mapped_column(String(255), default="")
    resource_type: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(255), default="")
    properties: Mapped[Any | None] = mapped_column(JSONType)
    # A lifecycle plugin call: plugin, phase, action, verdict, message, duration_ms.
    lifecycle: Mapped[Any | None] = mapped_column(JSONType)
    created_at: Mapped[datetime.datetime]


class EventDelivery(Base):
    """One event owed to one event sink of its stack: the outbox (``engine.db.event_outbox``),
    written in the transaction that writes the event, deleted once the sink answers 2xx.

    ``next_attempt_at`` is when it is due; a claim moves it a lease ahead (so a worker
    that dies mid-delivery leaves it due again) and ``claim`` names the claim, so only
    its holder settles it. Null once given up (``given_up_at``)."""

    __tablename__ = "event_deliveries"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(String(36))
    stack_id: Mapped[str] = mapped_column(ForeignKey("stacks.id", ondelete="CASCADE"),
                                          index=True)
    target: Mapped[str] = mapped_column(String(2048))
    # NOTE: the sink's signing secret, copied as the environment holds it: a stack
    # updated to other sinks still owes its earlier events to the sinks of their time.
    secret: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)  # the JSON sent, so every try signs the same
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime.datetime | None] = mapped_column(index=True)
    claim: Mapped[str | None] = mapped_column(String(36))
    last_error: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime.datetime]
    given_up_at: Mapped[datetime.datetime | None]


class Snapshot(Base):
    """A stack snapshot (Heat's ``snapshot`` table): the stack's definition and each
    resource's state and private data, written by the SNAPSHOT operation that made it
    (``data`` null until it ends), read back by a restore. ``data`` keeps hidden
    parameter values as given, for the restore; every view masks them."""

    __tablename__ = "snapshots"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    stack_id: Mapped[str] = mapped_column(ForeignKey("stacks.id", ondelete="CASCADE"),
                                          index=True)
    tenant_id: Mapped[str] = mapped_column(String(36))
    name: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    status_reason: Mapped[str | None] = mapped_column(Text)
    data: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime.datetime]
    updated_at: Mapped[datetime.datetime | None]


class StackDefinition(TypedDict):
    """What an update changes and a rollback restores: a stack's definition."""

    template: dict[str, Any]
    parameters: dict[str, Any]
    environment: NotRequired[dict[str, Any] | None]
    files: NotRequired[dict[str, Any]]  # missing from operations stored before files were kept


class AdoptedResource(TypedDict):
    """One resource of an adopt's abandon data: what its ADOPT step records."""

    resource_id: str | None
    resource_data: dict[str, Any]


class OperationContext(TypedDict):
    """Who asked: the context lifecycle plugins are called with."""

    tenant_id: str
    token_tenant_id: str
    role: str
    request_id: str
    username: str
    nested_in: NotRequired[str]  # a nested stack's operation: its root stack


class FollowUp(TypedDict):
    """The operation to start when a cancelled one has ended (a delete)."""

    action: str
    context: OperationContext
    timeout_seconds: int


class SnapshotTarget(TypedDict):
    """The snapshot a SNAPSHOT operation fills, or a RESTORE goes back to."""

    id: str
    # A restore's: each resource's entry in the snapshot's data, for its type's
    # ``handle_restore`` (copied, so deleting the snapshot meanwhile changes nothing).
    resources: NotRequired[dict[str, Any]]


class OperationPayload(TypedDict, total=False):
    """What the request carries beyond the stack row, and what was decided since."""

    resources: dict[str, AdoptedResource]  # an adopt's abandon data
    previous: StackDefinition  # an update's stored definition (a rollback's target)
    target: StackDefinition  # an update's new definition
    converge: bool  # an update observes its resources' backends first
    snapshot: SnapshotTarget  # a snapshot's, or a restore's (which has previous, target)
    kind: Literal["create", "update"]  # what a rollback undoes
    planned: bool  # steps are written: resources may have been touched
    cancelled: str  # who ended it: cancel_update, cancel_without_rollback, delete, operator
    then: FollowUp


class ApprovalState(TypedDict, total=False):
    """An approval gate: what the last pending pre-op asked, and what was decided."""

    plugin: str
    message: str
    override: bool  # approving overrides a soft-mandatory refusal
    requested_at: str  # ISO 8601, UTC
    expires_at: str
    decision: str  # Verdict.APPROVED or REJECTED; absent while nobody has decided
    decided_by: str
    comment: str
    decided_at: str


class LifecycleProgress(TypedDict, total=False):
    """Lifecycle calls made so far (each a ``CallRecord.as_dict()``)."""

    pre: list[dict[str, Any]]
    post_order: list[str]  # plugins owed a post-op, in calling order
    post: list[dict[str, Any]]
    outcome: str  # the stack's final status (COMPLETE or FAILED), for the post-ops
    approval: ApprovalState  # the operation's last approval gate
    # The plan the pre-ops saw, for the post-ops: {name: {"action": Change, "retained":
    # true where so}} (``engine.lifecycle.planned.plan_record``), no property values.
    planned: dict[str, dict[str, Any]]


class Operation(Base):
    """One stack request. Claimed with a lease while it is planned and while it is finished."""

    __tablename__ = "operations"
    __table_args__ = (
        # One unfinished operation per stack, decided by the database.
        Index("uq_operations_stack_id_unfinished", "stack_id", unique=True,
              sqlite_where=_UNFINISHED, postgresql_where=_UNFINISHED),
        Index("ix_operations_state_lease_expires_at", "state", "lease_expires_at"),
    )
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    stack_id: Mapped[str] = mapped_column(ForeignKey("stacks.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    failure_reason: Mapped[str | None] = mapped_column(Text)
    lease_owner: Mapped[str | None] = mapped_column(String(36))
    lease_expires_at: Mapped[datetime.datetime | None]
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    # Claims since a phase of it last completed: each claim adds one, a completed phase
    # sets it back to 0. So it counts the tries that failed on a bug or whose worker died
    # during them (``attempt`` counts every claim); see engine/worker/poison.py.
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Steps not yet closed; kept by db.steps under the operation's row lock, so finding
    # the last step is O(1) rather than a count over every step of a large stack.
    open_steps: Mapped[int] = mapped_column(Integer, default=0)
    # What the request carries beyond the stack row (adopt data, for instance).
    payload: Mapped[OperationPayload | None] = mapped_column(JSONType)
    # Who asked (tenant, role, request id): the context lifecycle plugins are called with.
    context: Mapped[OperationContext] = mapped_column(JSONType, default=dict)
    # Lifecycle calls made so far, so a worker that takes over neither repeats nor skips
    # one.
    lifecycle: Mapped[LifecycleProgress] = mapped_column(JSONType, default=dict)
    deadline_at: Mapped[datetime.datetime]
    created_at: Mapped[datetime.datetime]
    updated_at: Mapped[datetime.datetime | None]
    finished_at: Mapped[datetime.datetime | None]


class Step(Base):
    """One resource action of an operation."""

    __tablename__ = "steps"
    __table_args__ = (
        # An update has two steps for a resource: its UPDATE and its CLEANUP.
        UniqueConstraint("operation_id", "resource_name", "action"),
        Index("ix_steps_state_next_poll_at", "state", "next_poll_at"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = mapped_column(ForeignKey("operations.id", ondelete="CASCADE"))
    stack_id: Mapped[str] = mapped_column(String(36))
    resource_name: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    prerequisites_left: Mapped[int] = mapped_column(Integer)
    started: Mapped[bool] = mapped_column(Boolean, default=False)
    # The resource type's own progress token (whatever its handle_<action> returned):
    # Kiln stores it and hands it back to check_<action>_complete, never reads it.
    token: Mapped[Any | None] = mapped_column(JSONType)
    lease_owner: Mapped[str | None] = mapped_column(String(36))
    lease_expires_at: Mapped[datetime.datetime | None]
    next_poll_at: Mapped[datetime.datetime | None]
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    # Claims since its progress was last saved (as ``operations.failures``).
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    failure_reason: Mapped[str | None] = mapped_column(Text)
    # What an UPDATE step decided to do to its resource (CREATE, UPDATE, REPLACE,
    # RESTORE, NONE), stored with the decision so a resumed step does the same.
    resource_action: Mapped[str | None] = mapped_column(String(16))
    # The resource's type when the step was planned ([engine] type_concurrency).
    resource_type: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime.datetime | None]
    finished_at: Mapped[datetime.datetime | None]


class StepDependency(Base):
    __tablename__ = "step_dependencies"
    step_id: Mapped[int] = mapped_column(ForeignKey("steps.id", ondelete="CASCADE"),
                                         primary_key=True)
    prerequisite_id: Mapped[int] = mapped_column(ForeignKey("steps.id", ondelete="CASCADE"),
                                                 primary_key=True, index=True)


class Worker(Base):
    """One worker process's liveness: the operations and steps it claims are its own while
    its row is neither stopped nor fenced (``engine/db/leases.py``)."""

    __tablename__ = "workers"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime.datetime]
    heartbeat_at: Mapped[datetime.datetime]
    stopped_at: Mapped[datetime.datetime | None]
    # Its liveness lease: renewed at every heartbeat to now + ``lease_seconds`` by the
    # database's clock (on PostgreSQL; SQLite's is the one host's). Past it, any other
    # worker may fence it.
    alive_until: Mapped[datetime.datetime | None]
    # When another worker found its liveness lapsed and ended it: from then on everything
    # it holds may be claimed, and it never renews again (it rejoins under a new id).
    fenced_at: Mapped[datetime.datetime | None]
