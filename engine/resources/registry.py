"""The resource-type registry: stevedore namespace ``kiln.resource_types``.

Built once by ``engine.bootstrap`` and passed down; never a module global. Unlike
stevedore's lenient default, a type that fails to load or two types with one name stop
the process at start with a message naming the plugin: a silently missing type would
turn into confusing 400s for tenants.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import EntryPoint
from typing import Any

from stevedore import ExtensionManager
from stevedore.extension import Extension

from engine.errors import PluginLoadFailed, ResourceTypeNotFound
from engine.resources.base import Resource
from engine.resources.nested import template_resource
from engine.resources.shared_clients import ResourceServices
from engine.schema import HIDDEN, SUPPORT_STATUSES, CustomCheck, bind_schema, names_custom
from engine.template.environment import TEMPLATE_SUFFIXES

NAMESPACE = "kiln.resource_types"
CONSTRAINTS_NAMESPACE = "kiln.constraints"
#: The statuses a type may declare: Heat's, but HIDDEN (see ``Resource.support_status``).
TYPE_STATUSES = tuple(s for s in SUPPORT_STATUSES if s != HIDDEN)


class ResourceTypeRegistry:
    """The resource types, and the custom constraints (``kiln.constraints``) that
    templates and types name: both are what a template is checked against."""

    def __init__(self, types: Mapping[str, type[Resource]],
                 constraints: Mapping[str, CustomCheck] | None = None,
                 namespace: str = NAMESPACE,
                 entry_points: Mapping[str, str] | None = None,
                 services: ResourceServices | None = None) -> None:
        self.namespace = namespace
        #: What ``Runtime.service`` answers from (the AWS client factory, ...).
        self.services = services or ResourceServices()
        # type name -> "module:Class" as its entry point declares it
        self.entry_points = dict(entry_points or {})
        self._constraints = dict(constraints or {})
        self._types = {name: self._bound(name, cls, namespace) for name, cls in types.items()}
        self._templates: dict[str, type[Resource]] = {}

    @classmethod
    def load(cls, namespace: str = NAMESPACE,
             services: ResourceServices | None = None) -> ResourceTypeRegistry:
        # stevedore's type argument is what the plugin makes: Extension.plugin is type[T].
        manager: ExtensionManager[Resource] = ExtensionManager(
            namespace, invoke_on_load=False, on_load_failure_callback=_fail(namespace)
        )
        return cls.from_extensions(manager.extensions, namespace, load_constraints(),
                                   services)

    @classmethod
    def from_extensions(
        cls, extensions: Iterable[Extension[Resource]], namespace: str = NAMESPACE,
        constraints: Mapping[str, CustomCheck] | None = None,
        services: ResourceServices | None = None,
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
        entry_points = {ext.name: str(getattr(ext.entry_point, "value", ""))
                        for ext in extensions}
        return cls(types, constraints, namespace, entry_points, services)

    def get(self, type_name: str) -> type[Resource]:
        if type_name.endswith(TEMPLATE_SUFFIXES):
            # A provider template: the type is a file of the stack, one class per file.
            if type_name not in self._templates:
                self._templates[type_name] = template_resource(type_name)
            return self._templates[type_name]
        try:
            return self._types[type_name]
        except KeyError:
            raise ResourceTypeNotFound(type_name=type_name) from None

    def _bound(self, name: str, cls: type[Resource], namespace: str) -> type[Resource]:
        """``cls``, or a subclass of it whose properties schema has the custom constraints
        it names bound to their checks. A name nobody registered stops the process, as a
        type that fails to load does: every template using the type would fail."""
        if not names_custom(cls.properties_schema):
            return cls
        try:
            schema = bind_schema(cls.properties_schema, self.constraint)
        except KeyError as exc:
            raise PluginLoadFailed(name=name, namespace=namespace, reason=(
                f"its properties name the custom constraint {exc}, which no plugin "
                f"registers in {CONSTRAINTS_NAMESPACE}")) from None
        return type(cls.__name__, (cls,), {"properties_schema": schema,
                                           "__doc__": cls.__doc__,
                                           "__module__": cls.__module__})

    def constraint(self, name: str) -> CustomCheck:
        """The custom constraint registered as ``name``; KeyError when there is none."""
        return self._constraints[name]

    def constraint_names(self) -> list[str]:
        return sorted(self._constraints)

    def find(self, type_name: str) -> type[Resource] | None:
        """An installed type by name, as the catalogue lists them (no template files)."""
        return self._types.get(type_name)

    def for_stored(self, type_name: str) -> type[Resource] | None:
        """The class of a stored resource's type, template files included; None when
        the type was uninstalled since."""
        try:
            return self.get(type_name)
        except ResourceTypeNotFound:
            return None

    def names(self) -> list[str]:
        return sorted(self._types)


def _fail(namespace: str) -> Callable[[Any, EntryPoint, BaseException], None]:
    def fail(_manager: Any, entry_point: EntryPoint, error: BaseException) -> None:
        name = getattr(entry_point, "name", str(entry_point))
        raise PluginLoadFailed(name=name, namespace=namespace, reason=error) from error

    return fail


def load_constraints(namespace: str = CONSTRAINTS_NAMESPACE) -> dict[str, CustomCheck]:
    """Every custom constraint, instantiated once; a broken one stops the process."""
    manager: ExtensionManager[CustomCheck] = ExtensionManager(
        namespace, invoke_on_load=True, on_load_failure_callback=_fail(namespace))
    found: dict[str, CustomCheck] = {}
    for ext in manager.extensions:
        if not isinstance(ext.obj, CustomCheck):
            raise PluginLoadFailed(name=ext.name, namespace=namespace,
                                   reason="not a subclass of engine.schema.CustomCheck")
        if ext.name in found:
            raise PluginLoadFailed(name=ext.name, namespace=namespace,
                                   reason="two plugins declare this name")
        found[ext.name] = ext.obj
    return found
