"""``OS::Heat::SoftwareDeployment`` and ``OS::Heat::StructuredDeployment``: a config
deployed to a server, and the server's agent reporting back.

As in Heat, each action the deployment is triggered for (``actions``; a component's own
actions) derives a config from the source config: its inputs with their values, plus
the ``deploy_*`` inputs an agent needs (the server, the action, the stack and resource,
how to signal back). The deployment (a row of the tenant's software_deployments, the
physical id) then names that config with status ``IN_PROGRESS``, so
``GET /software_deployments/metadata/<server>`` gives it to the agent, and the resource
waits, holding no thread, until the deployment is ``COMPLETE`` or ``FAILED``.

The agent reports either way Heat's do: by a signal to the resource (its body
``deploy_stdout``, ``deploy_stderr``, ``deploy_status_code`` and the config's outputs;
each signal is applied to the deployment at the next poll, with Heat's rules), or by
``PUT /software_deployments/<id>`` with a status and output values. The transports:

* ``HEAT_SIGNAL``: the resource's signal URL with a signal token of its own
  (``Runtime.issue_signal_token``), given in Heat's input names: ``deploy_auth_url`` is
  Kiln's API for the tenant (there is no Keystone to ask for it), ``deploy_password`` the
  token to send as ``X-Auth-Token``, ``deploy_user_id`` and ``deploy_username`` the
  token's id, ``deploy_project_id`` the tenant; with ``deploy_stack_id`` and
  ``deploy_resource_name`` that is heatclient's ``resources.signal``.
* ``CFN_SIGNAL`` and ``TEMP_URL_SIGNAL``: ``deploy_signal_id`` is the signal URL signed
  with that token in its query, sent with no header (``deploy_signal_verb`` POST and
  PUT, as Heat's), where Heat gives an EC2-signed URL and a Swift TempURL.
* ``NO_SIGNAL``: complete at once. ``ZAQAR_SIGNAL`` is refused: there is no Zaqar.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from engine.errors import (
    BadRequest,
    InvalidTemplateAttribute,
    SoftwareConfigNotFound,
    SoftwareDeploymentNotFound,
    StackValidationFailed,
    UserParameterMissing,
)
from engine.resources.base import Resource, Signal, SoftwareConfigStore, Token
from engine.schema import LIST, MAP, STRING, AllowedValues, Attribute, Length, Property
from engine.vocabulary import Action, SignalTransport, Status
from plugins.resources.software_config import COMPONENT_GROUP, UNGROUPED

CFN_SIGNAL, TEMP_URL_SIGNAL, HEAT_SIGNAL, NO_SIGNAL, ZAQAR_SIGNAL = (
    SignalTransport.CFN_SIGNAL.value, SignalTransport.TEMP_URL_SIGNAL.value,
    SignalTransport.HEAT_SIGNAL.value, SignalTransport.NO_SIGNAL.value,
    SignalTransport.ZAQAR_SIGNAL.value)
SIGNAL_TRANSPORTS = (CFN_SIGNAL, TEMP_URL_SIGNAL, HEAT_SIGNAL, NO_SIGNAL, ZAQAR_SIGNAL)
#: Heat's ``default_deployment_signal_transport``.
DEFAULT_TRANSPORT = CFN_SIGNAL
#: The inputs of a derived config that carry the signal token (its secret, or what names
#: it): each action's derived config takes them from the one before, so the token is
#: issued once and its secret is kept nowhere else (Heat keeps it in the derived config).
TOKEN_INPUTS = ("deploy_signal_id", "deploy_auth_url", "deploy_username", "deploy_user_id",
                "deploy_password")
#: The longest text a deployment's ``server`` and ``name`` may be: their columns' (Heat's
#: database refuses more with a 500).
MAX_TEXT = 255
ALLOWED_ACTIONS = (Action.CREATE, Action.UPDATE, Action.DELETE, Action.SUSPEND,
                   Action.RESUME)
STDOUT, STDERR, STATUS_CODE = "deploy_stdout", "deploy_stderr", "deploy_status_code"
DEPLOY_OUTPUTS = (STDOUT, STDERR, STATUS_CODE)
#: Deployment ids: stable per resource (and generation), so a resumed create finds the
#: deployment it made rather than leave a second one on the server.
_IDS = uuid.UUID("8d1c5e42-7a3b-4f0e-9d61-2b5c0e7f4a19")


class Error(Exception):  # noqa: N818 -- Heat's name, in the failure reason
    """The deployment failed: ``Deployment to server failed: <its status reason>``."""


DEPLOYMENT_PROPERTIES: Mapping[str, Property] = {
    "config": Property(
        STRING,
        "ID of software configuration resource to execute when applying to the server.",
        update_allowed=True,
    ),
    "server": Property(
        STRING,
        "ID of resource to apply configuration to. Normally this should be a Nova "
        "server ID.",
        required=True, constraints=(Length(max=MAX_TEXT),),
    ),
    "input_values": Property(
        MAP, "Input values to apply to the software configuration on this server.",
        update_allowed=True,
    ),
    "actions": Property(
        LIST,
        "Which lifecycle actions of the deployment resource will result in this "
        "deployment being triggered.",
        update_allowed=True, default=[Action.CREATE, Action.UPDATE],
        constraints=(AllowedValues(ALLOWED_ACTIONS),),
    ),
    "name": Property(
        STRING,
        "Name of the derived config associated with this deployment. This is used to "
        "apply a sort order to the list of configurations currently deployed to a server.",
        update_allowed=True, constraints=(Length(max=MAX_TEXT),),
    ),
    "signal_transport": Property(
        STRING,
        "How the server should signal to heat with the deployment output values. "
        "CFN_SIGNAL will allow an HTTP POST to a CFN keypair signed URL. TEMP_URL_SIGNAL "
        "will create a Swift TempURL to be signaled via HTTP PUT. HEAT_SIGNAL will allow "
        "calls to the Heat API resource-signal using the provided keystone credentials. "
        "ZAQAR_SIGNAL will create a dedicated zaqar queue to be signaled using the "
        "provided keystone credentials. NO_SIGNAL will result in the resource going to "
        "the COMPLETE state without waiting for any signal.",
        default=DEFAULT_TRANSPORT, constraints=(AllowedValues(SIGNAL_TRANSPORTS),),
    ),
}


def check_transport(properties: Mapping[str, Any]) -> None:
    """Refuse the transports Kiln cannot serve (a 400 naming the property)."""
    if properties.get("signal_transport") == ZAQAR_SIGNAL:
        raise StackValidationFailed(
            reason=f"Property error: signal_transport: {ZAQAR_SIGNAL} is not supported by "
                   "Kiln, which has no Zaqar: use HEAT_SIGNAL, TEMP_URL_SIGNAL, CFN_SIGNAL "
                   "or NO_SIGNAL")


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one signal makes of an ``IN_PROGRESS`` deployment."""

    #: The deployment's new ``output_values``, ``status`` and ``status_reason``.
    changes: Mapping[str, Any]
    #: The SIGNAL event's words after ``deployment <id>`` (Heat's ``event_reason``).
    summary: str


def signal_outcome(output_values: Mapping[str, Any] | None, details: Mapping[str, Any],
                   outputs: Sequence[Mapping[str, Any]]) -> Outcome:
    """Heat's ``signal_software_deployment``: the output values the signal gives, and
    COMPLETE, or FAILED for a non-zero ``deploy_status_code`` or a value of an
    ``error_output`` output, with Heat's reason and event words."""
    values = dict(output_values or {})
    reasons: dict[str, Any] = {}
    code = details.get(STATUS_CODE)
    summary = "succeeded"
    if code and str(code) != "0":
        reasons[STATUS_CODE] = f"Deployment exited with non-zero status code: {code}"
        summary = f"failed ({code})"
    for output in outputs:
        name = output["name"]
        if name in details:
            values[name] = details[name]
            if output.get("error_output"):
                reasons[name] = details[name]
                summary = "failed"
    for name in DEPLOY_OUTPUTS:
        values[name] = details.get(name)
    if reasons:
        reason = ", ".join(f"{key} : {value}" for key, value in reasons.items())
        return Outcome({"output_values": values, "status": Status.FAILED.value,
                        "status_reason": reason}, summary)
    return Outcome({"output_values": values, "status": Status.COMPLETE.value,
                    "status_reason": "Outputs received"}, summary)


class SoftwareDeployment(Resource):
    """This resource associates a server with some configuration.

    The configuration is to be deployed to that server.

    A deployment allows input values to be specified which map to the inputs schema
    defined in the config resource. These input values are interpreted by the
    configuration tool in a tool-specific manner.

    Whenever this resource goes to an IN_PROGRESS state, it creates an ephemeral config
    that includes the inputs values plus a number of extra inputs which have names
    prefixed with ``deploy_``. The extra inputs relate to the current state of the stack,
    along with the information and credentials required to signal back the deployment
    results.

    Unless signal_transport=NO_SIGNAL, this resource will remain in an IN_PROGRESS state
    until the server signals it with the output values for that deployment. Those output
    values are then available as resource attributes, along with the default attributes
    deploy_stdout, deploy_stderr and deploy_status_code.
    """

    support_version: ClassVar[str] = "2014.1"
    properties_schema: ClassVar[Mapping[str, Property]] = DEPLOYMENT_PROPERTIES
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        STDOUT: Attribute("Captured stdout from the configuration execution.", type=STRING),
        STDERR: Attribute("Captured stderr from the configuration execution.", type=STRING),
        STATUS_CODE: Attribute("Returned status code from the configuration execution.",
                               type=STRING),
    }
    # Any output the config declares is an attribute too (checked when read).
    allow_unknown_attributes: ClassVar[bool] = True
    # A deployment triggered for DELETE or SUSPEND waits for its signal then too.
    no_signal_actions: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        check_transport(properties)

    # --- actions -------------------------------------------------------------------------

    def handle_create(self) -> Token:
        return self._handle_action(Action.CREATE)

    def check_create_complete(self, token: Token) -> bool:
        return self._check_complete(token)

    def needs_replacement(self, prop_diff: Mapping[str, Any]) -> bool:
        """Heat's rule besides the schema's: an input the (new) config marks
        ``replace_on_change`` whose value differs from the one the deployment's current
        derived config gave it replaces the deployment. An input the old derived config
        did not have never does."""
        if super().needs_replacement(prop_diff):
            return True
        if not {"config", "input_values"} & set(prop_diff):
            return False  # the same config and values derive the same inputs
        return self._an_input_replaces()

    def _an_input_replaces(self) -> bool:
        try:
            store = self.runtime.software_configs()
        except RuntimeError:
            # An update's preview reaches no store: it shows an update in place, as
            # Heat's does (Heat decides this in handle_update, which a preview never calls).
            return False
        deployment = store.get_deployment(self.physical_id or self._deployment_id())
        before = store.get_config(deployment["config_id"]) if deployment else None
        config_id = self.properties.get("config")
        source = store.get_config(config_id) if config_id else {}
        if before is None or source is None:
            return False  # never deployed, or a config gone: the update says so itself
        old = {item["name"]: item.get("value") for item in before.get("inputs") or []}
        values = self.properties.get("input_values") or {}
        return any(
            declared["name"] in old
            and values.get(declared["name"], declared.get("default")) != old[declared["name"]]
            for declared in source.get("inputs") or [] if declared.get("replace_on_change"))

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        return self._handle_action(Action.UPDATE)

    def check_update_complete(self, token: Token) -> bool:
        return self._check_complete(token)

    def handle_suspend(self) -> Token:
        return self._handle_action(Action.SUSPEND)

    def check_suspend_complete(self, token: Token) -> bool:
        return self._check_complete(token)

    def handle_resume(self) -> Token:
        return self._handle_action(Action.RESUME)

    def check_resume_complete(self, token: Token) -> bool:
        return self._check_complete(token)

    def handle_delete(self) -> Token:
        # As Heat: run the deployment for DELETE when it is triggered for it, then remove
        # the rows; a config or deployment gone meanwhile skips the run (Heat ignores
        # NotFound for the whole call).
        try:
            return self._handle_action(Action.DELETE)
        except (SoftwareConfigNotFound, SoftwareDeploymentNotFound):
            return None

    def check_delete_complete(self, token: Token) -> bool:
        if token:
            try:
                if not self._check_complete(token):
                    return False
            except SoftwareDeploymentNotFound:
                pass  # removed by its API meanwhile: nothing left to wait for
        self._delete_rows()
        return True

    # --- signals -------------------------------------------------------------------------

    def handle_signal(self, details: Mapping[str, Any] | None,
                      received: Sequence[Mapping[str, Any]]) -> Signal:
        """Kept as sent; applied to the deployment by the worker at its next look. The
        event names the outcome while the resource waits on its deployment; otherwise
        the signal changes nothing and its event has Heat's generic words (Heat's
        handler returns nothing then)."""
        if self.physical_id is None:
            raise BadRequest(reason="deployment_id must be specified")
        body = dict(details or {})
        if not self.data.get("waiting"):
            return Signal(body)
        outcome = signal_outcome(None, body, self.data.get("outputs") or [])
        return Signal(body, f"deployment {self.physical_id} {outcome.summary}")

    # --- attributes ----------------------------------------------------------------------

    def get_attribute(self, name: str) -> Any:
        """The deployment's output values, as the last completed action left them."""
        values = self.data.get("output_values") or {}
        if name in values:
            return values[name]
        declared = self.data.get("outputs")
        if declared is None or name in DEPLOY_OUTPUTS \
                or name in {o["name"] for o in declared}:
            return None
        raise InvalidTemplateAttribute(resource=self.name, key=name)

    def all_attributes(self) -> dict[str, Any]:
        """The schema's attributes and every output value received: a deployment group
        reads its members' outputs from here (Heat's ``get_attr: [d]`` has the schema's
        only)."""
        values = dict(self.data.get("output_values") or {})
        return {**{name: values.get(name) for name in self.attributes_schema}, **values}

    # --- the derived config --------------------------------------------------------------

    def empty_config(self) -> Any:
        return ""

    def derived_config(self, source: Mapping[str, Any],
                       inputs: Sequence[Mapping[str, Any]]) -> Any:
        return source.get("config")

    def _handle_action(self, action: str) -> Token:
        store = self.runtime.software_configs()
        source = self._source(store)
        self.data["outputs"] = [{"name": o["name"], "error_output": bool(o.get("error_output"))}
                                for o in source.get("outputs") or []]
        # A token's secret is kept in the derived configs only (a stack of before kept it
        # here too).
        self.data.pop("signal", None)
        if not self._triggered(action, source):
            return None
        previous = None
        if self.physical_id is not None:
            # Before anything is made for it: a deployment gone leaves no derived config.
            previous = store.get_deployment(self.physical_id)
            if previous is None:
                raise SoftwareDeploymentNotFound(id=self.physical_id)
        derived = self._create_derived(store, action, source, previous)
        waits = self.properties["signal_transport"] != NO_SIGNAL
        changes = {"config_id": derived["id"], "action": action,
                   "status": Status.IN_PROGRESS.value if waits else Status.COMPLETE.value,
                   "status_reason": "Deploy data available" if waits
                   else "Not waiting for outputs signal"}
        input_values = self.properties.get("input_values")
        if input_values:  # as Heat, which writes no empty field
            changes["input_values"] = input_values
        # Signals sent before this action are not its outcome.
        self.data["last_signal"] = self._last_signal()
        self.data["waiting"] = waits
        if previous is None:
            deployment_id = self._deployment_id()
            store.create_deployment(deployment_id, server_id=str(self.properties["server"]),
                                    **{"input_values": None, **changes})
            self.set_physical_id(deployment_id)
        else:
            store.update_deployment(previous["id"], changes)
            # The config the deployment named before, and the one the action before this
            # derived: a resumed action finds the deployment already pointed at its new
            # config, and still deletes the old one (a delete of one gone is a no-op).
            index = int(self.data["derived"]) - 1
            stale = {previous["config_id"]}
            if index > 0:
                stale.add(self._derived_id(index - 1))
            for config_id in sorted(stale - {derived["id"]}):
                store.delete_config(config_id)
        return {"deployment": self.physical_id} if waits else None

    def _check_complete(self, token: Token) -> bool:
        if not token:
            return True
        store = self.runtime.software_configs()
        deployment_id = str(token["deployment"])
        deployment = self._apply_signals(store, deployment_id)
        if deployment is None:
            raise SoftwareDeploymentNotFound(id=deployment_id)
        if deployment["status"] not in (Status.COMPLETE, Status.FAILED):
            return False
        self.data["output_values"] = deployment.get("output_values") or {}
        self.data["waiting"] = False
        if deployment["status"] == Status.FAILED:
            raise Error(f"Deployment to server failed: {deployment['status_reason']}")
        return True

    def _last_signal(self) -> int | None:
        """The number of the last signal the resource has taken."""
        after = self.data.get("last_signal")
        fresh = self.runtime.signals_after(after)
        return fresh[-1][0] if fresh else after

    def _apply_signals(self, store: SoftwareConfigStore, deployment_id: str
                       ) -> Mapping[str, Any] | None:
        """Apply the signals that arrived since the last one applied, in order, each
        checked and written in one transaction; one that finds the deployment no longer
        in progress changes nothing (Heat's rule). The deployment after them."""
        outputs = self.data.get("outputs") or []

        def applying(details: Mapping[str, Any]
                     ) -> Callable[[Mapping[str, Any]], Mapping[str, Any] | None]:
            def change(deployment: Mapping[str, Any]) -> Mapping[str, Any] | None:
                if deployment["status"] != Status.IN_PROGRESS:
                    return None
                return signal_outcome(deployment.get("output_values"), details,
                                      outputs).changes
            return change

        fresh = self.runtime.signals_after(self.data.get("last_signal"))
        if not fresh:
            return store.get_deployment(deployment_id)
        deployment = None
        for number, details in fresh:
            deployment = store.change_deployment(deployment_id, applying(details))
            self.data["last_signal"] = number
        return deployment

    def _source(self, store: SoftwareConfigStore) -> Mapping[str, Any]:
        config_id = self.properties.get("config")
        if not config_id:
            return {}
        found = store.get_config(config_id)
        if found is None:
            raise SoftwareConfigNotFound(id=config_id)
        return found

    def _triggered(self, action: str, source: Mapping[str, Any]) -> bool:
        if source.get("group") == COMPONENT_GROUP:
            config = source.get("config")
            configs = config.get("configs") if isinstance(config, Mapping) else None
            return any(action in (entry.get("actions") or []) for entry in configs or [])
        return action in (self.properties.get("actions") or [])

    def _create_derived(self, store: SoftwareConfigStore, action: str,
                        source: Mapping[str, Any], previous: Mapping[str, Any] | None
                        ) -> Mapping[str, Any]:
        # One id per derived config of this deployment: a resumed action (its data not
        # saved) finds the config it made, and issues no second token for it.
        count = int(self.data.get("derived", 0))
        config_id = self._derived_id(count)
        self.data["derived"] = count + 1
        found = store.get_config(config_id)
        if found is not None:
            return found
        inputs = self._derived_inputs(action, source, self._token_inputs(store, previous))
        return store.create_config(
            config_id=config_id,
            name=self.properties.get("name") or source.get("name")
            or self.physical_resource_name(),
            group=source.get("group") or UNGROUPED,
            config=self.derived_config(source, inputs) or self.empty_config(),
            inputs=inputs, outputs=list(source.get("outputs") or []),
            options=source.get("options"))

    def _deployment_id(self) -> str:
        return str(uuid.uuid5(_IDS, self.runtime.resource_key))

    def _derived_id(self, index: int) -> str:
        """The id of the deployment's ``index``-th derived config (from 0)."""
        return str(uuid.uuid5(_IDS, f"{self.runtime.resource_key}/config/{index}"))

    def _token_inputs(self, store: SoftwareConfigStore, previous: Mapping[str, Any] | None
                      ) -> dict[str, Any]:
        """The :data:`TOKEN_INPUTS` of the transport: the previous derived config's (one
        token for every action, as before), or those of a token issued now."""
        transport = self.properties["signal_transport"]
        if transport not in (CFN_SIGNAL, TEMP_URL_SIGNAL, HEAT_SIGNAL):
            return {}
        before = store.get_config(previous["config_id"]) if previous is not None else None
        given = {i["name"]: i.get("value") for i in (before or {}).get("inputs") or []}
        kept = {name: given[name] for name in TOKEN_INPUTS if given.get(name)}
        if given.get("deploy_signal_transport") == transport and kept:
            return kept
        issued = self.runtime.issue_signal_token()
        self.data["signal_token_id"] = issued.id  # its id only: never the secret
        return {"deploy_signal_id": issued.signed_url, "deploy_auth_url": issued.auth_url,
                "deploy_username": issued.id, "deploy_user_id": issued.id,
                "deploy_password": issued.secret}

    def _derived_inputs(self, action: str, source: Mapping[str, Any],
                        token: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Heat's order: the config's inputs with their values (the default where none
        is given), then the other input values as String inputs, then ``deploy_*``."""
        values = dict(self.properties.get("input_values") or {})
        inputs: list[dict[str, Any]] = []
        for declared in source.get("inputs") or []:
            item = dict(declared)
            item["value"] = values.pop(item["name"], item.get("default"))
            inputs.append(item)
        inputs.extend({"name": name, "type": "String", "value": value}
                      for name, value in values.items())

        def deploy(name: str, value: Any, description: str) -> None:
            inputs.append({"name": name, "description": description, "type": "String",
                           "value": value})

        runtime = self.runtime
        deploy("deploy_server_id", self.properties["server"],
               "ID of the server being deployed to")
        deploy("deploy_action", action, "Name of the current action being deployed")
        deploy("deploy_stack_id", f"{runtime.stack_name}/{runtime.stack_id}",
               "ID of the stack this deployment belongs to")
        deploy("deploy_resource_name", self.name,
               "Name of this deployment resource in the stack")
        transport = self.properties["signal_transport"]
        deploy("deploy_signal_transport", transport,
               "How the server should signal to heat with the deployment output values.")
        if transport in (CFN_SIGNAL, TEMP_URL_SIGNAL):
            deploy("deploy_signal_id", token["deploy_signal_id"],
                   "ID of signal to use for signaling output values")
            deploy("deploy_signal_verb", "PUT" if transport == TEMP_URL_SIGNAL else "POST",
                   "HTTP verb to use for signaling output values")
        elif transport == HEAT_SIGNAL:
            deploy("deploy_auth_url", token["deploy_auth_url"], "URL for API authentication")
            deploy("deploy_username", token["deploy_username"],
                   "Username for API authentication")
            deploy("deploy_user_id", token["deploy_user_id"], "User ID for API authentication")
            deploy("deploy_password", token["deploy_password"],
                   "Password for API authentication")
            deploy("deploy_project_id", runtime.tenant_id,
                   "ID of project for API authentication")
            deploy("deploy_region_name", None, "Region name for API authentication")
        return inputs

    def _delete_rows(self) -> None:
        """The deployment, its derived config and the signal token (Heat's
        ``_delete_resource``)."""
        if self.physical_id is not None:
            store = self.runtime.software_configs()
            deployment = store.get_deployment(self.physical_id)
            if deployment is not None:
                store.delete_deployment(self.physical_id)
                store.delete_config(deployment["config_id"])
        self.runtime.revoke_signal_tokens()


class StructuredDeployment(SoftwareDeployment):
    """A resource which has same logic with OS::Heat::SoftwareDeployment.

    A deployment resource like OS::Heat::SoftwareDeployment, but which performs input
    value substitution on the config defined by a OS::Heat::StructuredConfig resource.

    Some configuration tools have no concept of inputs, so the input value substitution
    needs to occur in the deployment resource. An example of this is the JSON metadata
    consumed by the cfn-init tool.

    Where the config contains {get_input: input_name} this will be substituted with the
    value of input_name in this resource's input_values. If get_input needs to be passed
    through to the substituted configuration then a different input_key property value
    can be specified.
    """

    properties_schema: ClassVar[Mapping[str, Property]] = {
        **DEPLOYMENT_PROPERTIES,
        "input_key": Property(
            STRING, "Name of key to use for substituting inputs during deployment.",
            default="get_input",
        ),
        "input_values_validate": Property(
            STRING,
            "Perform a check on the input values passed to verify that each required "
            "input has a corresponding value. When the property is set to STRICT and no "
            "value is passed, an exception is raised.",
            default="LAX", constraints=(AllowedValues(("LAX", "STRICT")),),
        ),
    }

    def empty_config(self) -> Any:
        return {}

    def derived_config(self, source: Mapping[str, Any],
                       inputs: Sequence[Mapping[str, Any]]) -> Any:
        values = {item["name"]: item.get("value") for item in inputs}
        return substitute(source.get("config"), values, str(self.properties["input_key"]),
                          strict=self.properties["input_values_validate"] == "STRICT")


def substitute(snippet: Any, values: Mapping[str, Any], input_key: str, *,
               strict: bool) -> Any:
    """``{<input_key>: name}`` replaced by the input's value, everywhere in ``snippet``
    (Heat's ``StructuredDeployment.parse``); STRICT refuses a name no input has."""
    if isinstance(snippet, Mapping):
        if len(snippet) == 1:
            (key, argument), = snippet.items()
            if key == input_key and isinstance(argument, str):
                if strict and argument not in values:
                    raise UserParameterMissing(key=argument)
                return values.get(argument)
        return {key: substitute(value, values, input_key, strict=strict)
                for key, value in snippet.items()}
    if isinstance(snippet, list):
        return [substitute(value, values, input_key, strict=strict) for value in snippet]
    return snippet
