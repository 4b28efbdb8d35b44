"""The resource-type registry: stevedore namespace ``kiln.resource_types``.

Built once by ``engine.bootstrap`` and passed down; never a module global. Unlike
stevedore's lenient default, a type that fails to load or two types with one name stop
the process at start with a message naming the plugin: a silently missing type would
turn into confusing 400s for tenants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint

from stevedore import ExtensionManager
from stevedore.extension import Extension

from engine.errors import PluginLoadFailed, ResourceTypeNotFound
from engine.resources.base import Resource
from engine.schema import HIDDEN, SUPPORT_STATUSES

NAMESPACE = "kiln.resource_types"
#: The statuses a type may declare: Heat's, but HIDDEN (see ``Resource.support_status``).
TYPE_STATUSES = tuple(s for s in SUPPORT_STATUSES if s != HIDDEN)


class ResourceTypeRegistry:
    def __init__(self, types: Mapping[str, type[Resource]]) -> None:
        self._types = dict(types)

    @classmethod
    def load(cls, namespace: str = NAMESPACE) -> ResourceTypeRegistry:
        def fail(_manager: ExtensionManager[Resource], entry_point: EntryPoint,
                 error: BaseException) -> None:
            name = getattr(entry_point, "name", str(entry_point))
            raise PluginLoadFailed(name=name, namespace=namespace, reason=error) from error

        # stevedore's type argument is what the plugin makes: Extension.plugin is type[T].
        manager: ExtensionManager[Resource] = ExtensionManager(
            namespace, invoke_on_load=False, on_load_failure_callback=fail
        )
        return cls.from_extensions(manager.extensions, namespace)

    @classmethod
    def from_extensions(
        cls, extensions: Iterable[Extension[Resource]], namespace: str = NAMESPACE
    ) -> ResourceTypeRegistry:
        types: dict[str, type[Resource]] = {}
        for ext in extensions:
            if ext.name in types and types[ext.name] is not ext.plugin:
                raise PluginLoadFailed(name=ext.name, namespace=namespace,
                                       reason="two plugins declare this name")
            if not (isinstance(ext.plugin, type) and issubclass(ext.plugin, Resource)):
                raise PluginLoadFailed(name=ext.name, namespace=namespace,
                                       reason="not a subclass of engine.resources.base.Resource")
            if ext.plugin.support_status not in TYPE_STATUSES:
                # Heat turns an unknown status into UNKNOWN with a message; a typo in a
                # plugin is better found at start.
                raise PluginLoadFailed(
                    name=ext.name, namespace=namespace,
                    reason=f"support_status {ext.plugin.support_status!r} is not one of "
                           f"{', '.join(TYPE_STATUSES)}")
            types[ext.name] = ext.plugin
        return cls(types)

    def get(self, type_name: str) -> type[Resource]:
        try:
            return self._types[type_name]
        except KeyError:
            raise ResourceTypeNotFound(type_name=type_name) from None

    def find(self, type_name: str) -> type[Resource] | None:
        return self._types.get(type_name)

    def names(self) -> list[str]:
        return sorted(self._types)
