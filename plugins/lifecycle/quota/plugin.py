"""``quota``: per-tenant limits on stacks and resources, counted in the database.

A pre-op that adds to a tenant's usage (create, adopt, an update that grows the stack)
reserves under a per-tenant lock, or is denied; the post-op then records what the stack
really holds, which undoes the reservation when the operation failed. Every write sets
the stack's row to a value computed from the views, never adds to it, so a call repeated
after a worker crash changes nothing. See ``specs/lifecycle-quota.rst``.

A stack's resources are the entries of ``StackView.resources``: the top-level resources
of its template. A nested stack's operations call the plugin like any stack's, so each
nested stack holds a row of its own, naming the root of its tree (``StackView``'s
``root_stack_id``): the tenant's stack count counts trees (top-level stacks), its
resource count every row, and the per-stack limit a tree's rows together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from oslo_config import cfg

from engine.lifecycle.base import LifecyclePlugin, PluginServices, Warn
from engine.vocabulary import UPDATE_LIKE, Action
from plugins.lifecycle.quota import limits
from plugins.lifecycle.quota.store import Holding, Others, Place, QuotaStore

if TYPE_CHECKING:
    from engine.context import RequestContext
    from engine.lifecycle.view import StackView

GROUP = "lifecycle_quota"

OPTS = [
    cfg.IntOpt(
        "max_stacks_per_tenant",
        default=512,
        min=-1,
        help="Most stacks a tenant may have (Heat's default is 512), counting top-level "
        "stacks only: a stack and the stacks nested in it are one; -1 for no limit.",
    ),
    cfg.IntOpt(
        "max_resources_per_tenant",
        default=-1,
        min=-1,
        help="Most resources a tenant's stacks may hold together, nested stacks' "
        "resources included; -1 for no limit.",
    ),
    cfg.IntOpt(
        "max_resources_per_stack",
        default=-1,
        min=-1,
        help="Most resources one top-level stack and every stack nested in it may hold "
        "together, so that splitting a stack into nested ones does not pass it (the "
        "resource owning a nested stack counts besides the nested stack's own); -1 for "
        "no limit. ([api] max_resources_per_stack bounds the same tree for every "
        "tenant alike.)",
    ),
    cfg.DictOpt(
        "tenant_overrides",
        default={},
        help="Limits for particular tenants instead of the three above, as "
        "<tenant_id>:<stacks>/<resources>[/<resources per stack>] entries separated by "
        "commas; each number is a whole number or -1 for no limit, and an entry without "
        "the third keeps max_resources_per_stack. Example: "
        "8d2c0f7e5a1b4c39a6e3f0d1b2c3d4e5:10/200,9e3d1a8f6b2c4d40b7f4a1e2c3d4e5f6:-1/5000/500",
    ),
]

def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(GROUP, list(OPTS))]


class QuotaPlugin(LifecyclePlugin):
    """Per-tenant stack and resource limits."""

    supports_dry_run: ClassVar[bool] = True

    def configure(self, services: PluginServices) -> None:
        services.conf.register_opts(OPTS, group=GROUP)
        group = services.conf[GROUP]
        default = limits.Limits(stacks=_option(group, "max_stacks_per_tenant"),
                                resources=_option(group, "max_resources_per_tenant"),
                                stack_resources=_option(group, "max_resources_per_stack"))
        overrides = limits.parse_overrides(_option(group, "tenant_overrides"),
                                           f"[{GROUP}] tenant_overrides",
                                           default.stack_resources)
        self._quotas = limits.Quotas(default=default, overrides=overrides)
        self._store = QuotaStore(services.database, services.clock)

    def get_ordinal(self) -> int:
        # Early: a denial here is cheap and should come before plugins that reserve
        # things of their own (placement).
        return 20

    def do_pre_op(self, cnxt: RequestContext, stack: StackView,
                  current_stack: StackView | None = None,
                  action: str | None = None) -> Warn | None:
        action = (action or stack.action).upper()
        tenant_id = stack.tenant_id
        tenant_limits = self._quotas.for_tenant(tenant_id)
        nested = stack.nested_depth > 0
        root_name = stack.path[0][1]
        if action in (Action.CREATE, Action.ADOPT):
            wanted = len(stack.resources)

            def decide_new(others: Others) -> None:
                if not nested:  # a nested stack is part of its root's one stack
                    limits.check_stacks(tenant_id, tenant_limits, others.tenant.stacks)
                limits.check_resources(tenant_id, tenant_limits, others.tenant.resources,
                                       0, wanted)
                limits.check_stack_resources(root_name, nested, tenant_limits,
                                             others.tree_resources, 0, wanted)

            self._store.reserve(_place(stack), action, Holding(wanted), decide_new,
                                dry_run=stack.dry_run)
        elif action in UPDATE_LIKE and action != Action.ROLLBACK:
            # A rollback goes back within what its failed update held: nothing to decide.
            held, wanted = _sizes(stack, current_stack)

            def decide_update(others: Others) -> None:
                limits.check_resources(tenant_id, tenant_limits, others.tenant.resources,
                                       held, wanted)
                limits.check_stack_resources(root_name, nested, tenant_limits,
                                             others.tree_resources, held, wanted)

            # Hold the larger of the two while the update runs: old resources are
            # replaced only after the new ones exist.
            self._store.reserve(_place(stack), action,
                                Holding(held, max(0, wanted - held)), decide_update,
                                dry_run=stack.dry_run)
        # Every other action only keeps or lowers usage: nothing to decide or reserve.
        return None

    def do_post_op(self, cnxt: RequestContext, stack: StackView,
                   current_stack: StackView | None = None, action: str | None = None,
                   is_stack_failure: bool = False) -> None:
        if stack.dry_run:
            return
        action = (action or stack.action).upper()
        place = _place(stack)
        if action in (Action.CREATE, Action.ADOPT):
            # A failed create counts what it left behind until the tenant deletes it; one
            # that created nothing (denied, or failed at once) gives its slot back.
            left = sum(1 for resource in stack.resources.values() if resource.exists)
            if is_stack_failure and not left:
                self._store.release(stack.id, stack.tenant_id)
            elif is_stack_failure:
                self._store.settle(place, action, Holding(left))
            else:
                self._store.settle(place, action, Holding(len(stack.resources)))
        elif action == Action.ROLLBACK:
            self._after_rollback(stack, current_stack, is_stack_failure)
        elif action in UPDATE_LIKE:
            held, wanted = _sizes(stack, current_stack)
            self._store.settle(place, action, Holding(held if is_stack_failure else wanted))
        elif action in (Action.DELETE, Action.ABANDON) and not is_stack_failure:
            # A failed delete keeps its row: the resources it did not delete still exist.
            self._store.release(stack.id, stack.tenant_id)

    def _after_rollback(self, stack: StackView, current_stack: StackView | None,
                        is_stack_failure: bool) -> None:
        if current_stack is None:
            # The rollback of a create: the create failed, so the slot is given back
            # as the create's own post-op does.
            self._store.release(stack.id, stack.tenant_id)
            return
        held, wanted = _sizes(stack, current_stack)
        # A rollback that completed restored the stored stack; one that failed may have
        # left resources of both, so it keeps the larger count.
        self._store.settle(_place(stack), Action.ROLLBACK,
                           Holding(max(held, wanted) if is_stack_failure else held))

    def describe_stack(self, stack_id: str) -> Any:
        row = self._store.stack(stack_id)
        if row is None:
            return None
        tenant_limits = self._quotas.for_tenant(row.tenant_id)
        usage = self._store.tenant(row.tenant_id)
        return {
            "tenant_id": row.tenant_id,
            "root_stack_id": row.root_stack_id,
            "resources": row.resources,
            "pending_resources": row.pending_resources,
            "action": row.action,
            "updated_at": row.updated_at.isoformat(),
            "tenant_limits": {"stacks": tenant_limits.stacks,
                              "resources": tenant_limits.resources,
                              "resources_per_stack": tenant_limits.stack_resources},
            "tenant_usage": {"stacks": usage.stacks, "resources": usage.resources},
            "tree_usage": {"resources": self._store.tree(row.root_stack_id)},
        }


def _place(stack: StackView) -> Place:
    return Place(stack_id=stack.id, tenant_id=stack.tenant_id,
                 root_stack_id=stack.root_stack_id)


def _sizes(stack: StackView, current_stack: StackView | None) -> tuple[int, int]:
    """Resources of the stored stack and of the stack an update builds."""
    new = current_stack if current_stack is not None else stack
    return len(stack.resources), len(new.resources)


def _option(group: Any, name: str) -> Any:
    try:
        return getattr(group, name)
    except (cfg.Error, ValueError) as exc:
        raise ValueError(f"[{GROUP}] {name}: {exc}") from exc
