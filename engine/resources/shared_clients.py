"""The per-process clients resource types share ("resource services"): stevedore
namespace ``kiln.resource_services``. Not to be confused with ``engine.services``, the
use-cases the API and the CLI call.

A resource service is what many resources of a process must share rather than build per
call: a cloud SDK's client factory (``aws``: boto3 sessions and clients, which are slow
to make and safe to share), a connection pool. Each entry point names a callable taking the
process's oslo.config ``ConfigOpts``; it is called once at start (register your options
there and read them), and a resource reaches the result with ``runtime.service(name)``.

As for resource types, a service that fails to load stops the process at start, naming
the plugin: a missing client factory would otherwise fail every resource that needs it,
one by one, at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stevedore import ExtensionManager

from engine.errors import NotSupported, PluginLoadFailed

NAMESPACE = "kiln.resource_services"


class ResourceServices:
    """The services, built once per process and handed down; never a module global."""

    def __init__(self, services: Mapping[str, Any] | None = None) -> None:
        self._services = dict(services or {})

    @classmethod
    def load(cls, conf: Any, namespace: str = NAMESPACE) -> ResourceServices:
        def fail(_manager: Any, entry_point: Any, error: BaseException) -> None:
            name = getattr(entry_point, "name", str(entry_point))
            raise PluginLoadFailed(name=name, namespace=namespace, reason=error) from error

        manager: ExtensionManager[Any] = ExtensionManager(
            namespace, invoke_on_load=True, invoke_args=(conf,),
            on_load_failure_callback=fail)
        found: dict[str, Any] = {}
        for ext in manager.extensions:
            if ext.name in found:
                raise PluginLoadFailed(name=ext.name, namespace=namespace,
                                       reason="two plugins declare this name")
            found[ext.name] = ext.obj
        return cls(found)

    def get(self, name: str) -> Any:
        try:
            return self._services[name]
        except KeyError:
            raise NotSupported(feature=f"The resource service {name!r} (not installed, or "
                                       "this process was built without services)") from None
