"""Test plugins steered by stack tags, each writing every call it receives to the JSON-lines
file named by KILN_TEST_LIFECYCLE_LOG (the plugins' own account, independent of Kiln's
events).

* audit: ordinal 5 but ``after = ("policy",)``; tag ``audit-deny`` denies, ``audit-warn``
  warns, ``audit-post-error`` makes its post-op raise, ``audit-exit`` makes its pre-op end
  the whole process at once (``os._exit``), as a plugin that crashes its worker would.
* gate: ordinal 60 but ``before = ("placement",)``; tag ``gate-deny`` denies every
  action, ``gate-deny-<action>`` (``gate-deny-suspend``) that action only.
* hang: ordinal 70; tag ``hang`` makes its pre-op sleep far past any timeout.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from engine.lifecycle.base import Denied, LifecyclePlugin, Warn

_LOCK = threading.Lock()


def _log(plugin: str, phase: str, stack: Any, action: Any, **extra: Any) -> None:
    path = os.environ.get("KILN_TEST_LIFECYCLE_LOG")
    if not path:
        return
    line = {"plugin": plugin, "phase": phase, "action": action, "stack_id": stack.id,
            "stack_name": stack.name, "status": stack.status, "dry_run": stack.dry_run,
            **extra}
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


class _Recording(LifecyclePlugin):
    name = ""

    def do_pre_op(self, cnxt: Any, stack: Any, current_stack: Any = None,
                  action: Any = None) -> Warn | None:
        _log(self.name, "pre", stack, action, tenant=cnxt.tenant_id,
             resources=sorted(stack.resources),
             current_resources=None if current_stack is None
             else sorted(current_stack.resources))
        return self.decide(stack, str(action))

    def do_post_op(self, cnxt: Any, stack: Any, current_stack: Any = None, action: Any = None,
                   is_stack_failure: bool = False) -> None:
        _log(self.name, "post", stack, action, is_stack_failure=is_stack_failure)

    def decide(self, stack: Any, action: str) -> Warn | None:
        return None


class Audit(_Recording):
    name = "audit"
    after = ("policy",)
    supports_dry_run = True

    def get_ordinal(self) -> int:
        return 5

    def decide(self, stack: Any, action: str) -> Warn | None:
        if "audit-exit" in stack.tags:
            os._exit(70)
        if "audit-deny" in stack.tags:
            raise Denied(f"audit refuses stack {stack.name}")
        if "audit-warn" in stack.tags:
            return Warn(f"audit noticed {len(stack.resources)} resources")
        return None

    def do_post_op(self, cnxt: Any, stack: Any, current_stack: Any = None, action: Any = None,
                   is_stack_failure: bool = False) -> None:
        super().do_post_op(cnxt, stack, current_stack, action, is_stack_failure)
        if "audit-post-error" in stack.tags:
            raise RuntimeError("audit post-op failed on purpose")


class Gate(_Recording):
    name = "gate"
    before = ("placement",)

    def get_ordinal(self) -> int:
        return 60

    def decide(self, stack: Any, action: str) -> Warn | None:
        if "gate-deny" in stack.tags or f"gate-deny-{action.lower()}" in stack.tags:
            raise Denied(f"gate closed for {stack.name}")
        return None


class Hang(_Recording):
    name = "hang"

    def get_ordinal(self) -> int:
        return 70

    def decide(self, stack: Any, action: str) -> Warn | None:
        if "hang" in stack.tags:
            time.sleep(3600)
        return None
