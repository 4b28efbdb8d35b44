"""The contract between Kiln and a stack lifecycle plugin.

A lifecycle plugin is called before and after every stack operation: create, update,
delete, abandon, adopt, suspend, resume, check, cancel and the rollback that follows a
failed create or update. It can examine the whole stack before any resource is touched
(placement, policy, quota, licences) and is told how the operation ended.

The method names and arguments are Heat's, so a plugin written for Heat's
``heat.engine.lifecycle_plugin.LifecyclePlugin`` ports by changing its base-class import.

Writing a plugin
----------------
* Subclass :class:`LifecyclePlugin` and declare it in your package's ``setup.cfg``::

      [entry_points]
      kiln.lifecycle_plugins =
          licence = my_package.licence:LicencePlugin

  The entry-point name is the plugin's name in configuration, events and error messages.
* The class is instantiated once per process with no arguments, then
  :meth:`LifecyclePlugin.configure` is called with the :class:`PluginServices`. A plugin
  that fails to import, instantiate or configure stops the process at start: a policy
  never silently stops being enforced.

``do_pre_op(context, stack, current_stack=None, action=None)``
    Called before the operation touches any resource. ``stack`` is a read-only
    :class:`~engine.lifecycle.view.StackView`; on UPDATE (and its ROLLBACK) ``stack`` is
    the stored stack and ``current_stack`` the stack the update builds, as in Heat.
    *Allow* by returning ``None``. *Warn* by returning :class:`Warn`: the message is
    recorded and the operation goes on. *Deny* by raising :class:`Denied` (any other
    exception is recorded as an error and denies too): the operation fails before any
    resource is touched, with a reason naming the plugin and the message. *Ask a person*
    by returning :class:`Pending` (Kiln's addition, an approval gate): the operation is
    parked, holding no worker, until someone approves it (the next plugins are then
    called), rejects it or lets its approval window pass (both deny it, and the plugins
    already called are unwound as for any denial).
``do_post_op(context, stack, current_stack=None, action=None, is_stack_failure=False)``
    Called after the final stack status is stored, on every ending: success, resource
    failure, timeout, cancel, rollback, a denial by any pre-op, and an operation finished
    by another worker after this one died. ``is_stack_failure`` tells the truth. A plugin
    whose pre-op was called always gets its post-op, including the plugin that denied,
    so every decision a pre-op made (a reservation, a licence) can be un-made. Post-ops
    run in the reverse of the pre-op order. An exception here is recorded and the other
    post-ops still run. The views carry the plan the pre-ops saw (``stack.changes``,
    actions only) and, Kiln's addition, what became of each resource
    (``stack.outcomes``: its action, status and reason as stored).
``cache_key(context, stack, current_stack=None, action=None)``
    Kiln's addition, optional: on UPDATE, a string that changes whenever this plugin's
    decision could (a digest of what the pre-op reads: the new template, the parameters
    it checks, its own rules' version), or ``None`` (the default) to be called every
    time. When the key equals the one this plugin gave at the stack's last update that
    completed, the pre-op is not called: the call is recorded with the verdict
    ``skipped`` and no post-op is owed for it. The key is stored with the call record
    and shown with it, so make it a digest, never a secret. Asked on the pre-op's thread
    within its time limit; a key that raises is logged and the pre-op is called.
``tree_scope``
    Kiln's addition, a class attribute: ``"every"`` (the default, as in Heat) to be
    called for the operations of every stack of a nested tree, or ``"root"`` to be
    called for the top-level stack's only. A ``"root"`` plugin is not called for a
    nested stack's operations (``stack.nested_depth > 0``), dry runs included: its
    pre-op is recorded with the verdict ``skipped`` and no post-op is owed for it. Any
    other value stops the process at start.
``get_ordinal()``
    Lower runs earlier; the default is 100. ``before``/``after`` name other plugins this
    one must precede or follow; ties are broken by name.

Rules
-----
* **Idempotent calls.** Kiln records each call as it returns. A worker that dies
  between a call and its record leaves the call to be made again by the worker that
  takes over, so a pre-op may see the same (stack id, action) twice: key your decisions
  on ``stack.id`` and ``action`` and make the second call a no-op.
* **Time limit.** Each call is bounded by ``[lifecycle_plugins] timeout_seconds``; a call
  that passes it is abandoned (Python cannot stop a thread, so it runs on in the
  background) and counts as a denial, or a warning where ``on_timeout = warn``.
* **Dry runs.** Stack preview and template validate call the pre-ops of plugins that set
  ``supports_dry_run = True`` with ``stack.dry_run`` true: report what you would decide and
  reserve nothing. Plugins that do not set it are reported as not evaluated.
* **Read only.** The views are frozen; an attempt to change one raises.
* **No secrets.** Hidden parameter values are masked in the views before a plugin sees
  them; do not log the context's request data beyond ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from engine.clock import Clock
    from engine.context import RequestContext
    from engine.lifecycle.view import StackView

DEFAULT_ORDINAL = 100
# ``LifecyclePlugin.tree_scope``: called for every stack of a tree, or for its root only.
EVERY_STACK, ROOT_STACK = "every", "root"
TREE_SCOPES = (EVERY_STACK, ROOT_STACK)


class Denied(Exception):  # noqa: N818 -- reads as the verdict it is: raise Denied("...")
    """Raised by a pre-op to refuse the operation; the message becomes the stack reason."""


@dataclasses.dataclass(frozen=True)
class Warn:
    """Returned by a pre-op to let the operation go on with a recorded warning."""

    message: str


@dataclasses.dataclass(frozen=True)
class Pending:
    """Kiln's addition, returned by a pre-op to have a person decide: the operation
    parks until it is approved (through the API or ``kiln-manage operation approve``),
    rejected, or ``window_seconds`` pass (``[lifecycle_plugins]
    approval_window_seconds`` when None). ``message`` says who should decide and why;
    it is the stack's status reason while the operation waits. ``override`` marks a
    soft-mandatory verdict: a refusal that an approval may override, recorded as an
    override. In a dry run the verdict is reported as ``pending`` and refuses nothing."""

    message: str
    window_seconds: float | None = None
    override: bool = False


class Transactions(Protocol):
    """Kiln's database, for plugins that keep state of their own.

    ``transaction()`` yields a SQLAlchemy ``Session`` in a transaction that commits when
    the block ends. On SQLite it is the only writer while it is open; on PostgreSQL lock
    the rows you count (``SELECT ... FOR UPDATE``) to serialise concurrent decisions.
    """

    def transaction(self) -> AbstractContextManager[Any]: ...

    def read(self) -> AbstractContextManager[Any]: ...


@dataclasses.dataclass(frozen=True)
class PluginServices:
    """What Kiln gives a plugin at configure time."""

    conf: Any  # the process's oslo.config ConfigOpts; register your own group on it
    database: Transactions
    clock: Clock  # now, timezone-aware in UTC


class LifecyclePlugin:
    """Base class of stack lifecycle plugins; see the module documentation."""

    #: Names of plugins this one must run before / after (in pre-op order).
    before: ClassVar[tuple[str, ...]] = ()
    after: ClassVar[tuple[str, ...]] = ()
    #: True if ``do_pre_op`` honours ``stack.dry_run`` (decides, reserves nothing).
    supports_dry_run: ClassVar[bool] = False
    #: Kiln's addition: ``"every"`` stack of a nested tree, or only the ``"root"``.
    tree_scope: ClassVar[str] = EVERY_STACK

    def configure(self, services: PluginServices) -> None:
        """Called once after instantiation; raise to stop the process from starting."""

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | Pending | None:
        return None

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        return None

    def cache_key(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> str | None:
        """Kiln's addition: on UPDATE, a key that an unchanged update repeats, so that
        its pre-op can be skipped; ``None`` never skips. See the module documentation."""
        return None

    def get_ordinal(self) -> int:
        return DEFAULT_ORDINAL

    def describe_stack(self, stack_id: str) -> Any:
        """Kiln's addition: what this plugin holds for a stack (placements, reserved
        quota), as plain JSON-able data, or ``None``. Shown by ``GET .../lifecycle``."""
        return None

    def placement_of(self, stack_id: str, resource_name: str) -> Mapping[str, Any] | None:
        """Kiln's addition: where this plugin placed one resource, ``{"rack", "host"}``,
        or None. The worker hands it to the resource (``Runtime.placement``), so a type
        whose backend has such a notion (an AWS availability zone) can act on it. Called
        from worker threads, once per create or update of a resource."""
        return None
