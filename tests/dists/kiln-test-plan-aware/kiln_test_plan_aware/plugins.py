"""Plan-aware test plugins, each writing every call it receives to the JSON-lines file
named by KILN_TEST_PLAN_LOG (the plugins' own account, independent of Kiln's events).

* guard (ordinal 10): refuses to replace or delete, in an update, any resource whose name
  starts with ``db``, reading the planned changes; it supports dry runs, so the door and
  the previews refuse such an update too.
* ask (ordinal 20): on a stack tagged ``needs-approval``, asks a person to approve every
  create and update (``Pending``); a tag ``approval-window-<seconds>`` gives the window.
* cached (ordinal 30): a cache key that is a digest of the template and parameters the
  update builds, so an update that changes neither skips it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from typing import Any

from engine.lifecycle.base import Denied, LifecyclePlugin, Pending
from engine.lifecycle.view import thaw

_LOCK = threading.Lock()


def _log(plugin: str, phase: str, stack: Any, action: Any, **extra: Any) -> None:
    path = os.environ.get("KILN_TEST_PLAN_LOG")
    if not path:
        return
    line = {"plugin": plugin, "phase": phase, "action": action, "stack_id": stack.id,
            "dry_run": stack.dry_run, **extra}
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


class _Logged(LifecyclePlugin):
    name = ""
    ordinal = 100

    def get_ordinal(self) -> int:
        return self.ordinal

    def do_pre_op(self, cnxt: Any, stack: Any, current_stack: Any = None,
                  action: Any = None) -> Pending | None:
        _log(self.name, "pre", stack, action,
             changes={name: str(change.action) for name, change in stack.changes.items()})
        return self.decide(stack, str(action))

    def do_post_op(self, cnxt: Any, stack: Any, current_stack: Any = None, action: Any = None,
                   is_stack_failure: bool = False) -> None:
        _log(self.name, "post", stack, action, is_stack_failure=is_stack_failure)

    def decide(self, stack: Any, action: str) -> Pending | None:
        return None


class Guard(_Logged):
    name, ordinal = "guard", 10
    supports_dry_run = True

    def decide(self, stack: Any, action: str) -> Pending | None:
        if action != "UPDATE":
            return None
        hit = sorted(name for name, change in stack.changes.items()
                     if name.startswith("db") and change.action in ("REPLACE", "DELETE"))
        if hit:
            changes = ", ".join(f"{name} ({stack.changes[name].action})" for name in hit)
            raise Denied(f"guard: databases are never replaced or deleted: {changes}")
        return None


class Ask(_Logged):
    name, ordinal = "ask", 20
    supports_dry_run = True

    def decide(self, stack: Any, action: str) -> Pending | None:
        if "needs-approval" not in stack.tags or action not in ("CREATE", "UPDATE"):
            return None
        window = next((float(tag.rsplit("-", 1)[1]) for tag in stack.tags
                       if tag.startswith("approval-window-")), None)
        return Pending(f"{action.lower()} of {stack.name} needs an operator's approval",
                       window_seconds=window)


class Cached(_Logged):
    name, ordinal = "cached", 30

    def cache_key(self, cnxt: Any, stack: Any, current_stack: Any = None,
                  action: Any = None) -> str | None:
        target = current_stack or stack
        text = json.dumps([thaw(target.template), thaw(target.parameters)],
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()
