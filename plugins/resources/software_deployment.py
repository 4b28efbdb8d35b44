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

import uuid
from collections.abc import Mapping, Sequence
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
from engine.schema import LIST, MAP, STRING, AllowedValues, Attribute, Property
from engine.vocabulary import Action

COMPONENT_GROUP = "component"
UNGROUPED = "Heat::Ungrouped"
IN_PROGRESS, FAILED, COMPLETE = "IN_PROGRESS", "FAILED", "COMPLETE"
CFN_SIGNAL, TEMP_URL_SIGNAL, HEAT_SIGNAL, NO_SIGNAL, ZAQAR_SIGNAL = (
    "CFN_SIGNAL", "TEMP_URL_SIGNAL", "HEAT_SIGNAL", "NO_SIGNAL", "ZAQAR_SIGNAL")
SIGNAL_TRANSPORTS = (CFN_SIGNAL, TEMP_URL_SIGNAL, HEAT_SIGNAL, NO_SIGNAL, ZAQAR_SIGNAL)
#: Heat's ``default_deployment_signal_transport``.
DEFAULT_TRANSPORT = CFN_SIGNAL
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
        required=True,
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
        update_allowed=True,
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


def signal_outcome(deployment: Mapping[str, Any], details: Mapping[str, Any],
                   outputs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What one signal makes of an ``IN_PROGRESS`` deployment (Heat's
    ``signal_software_deployment``): its output values, and COMPLETE, or FAILED for a
    non-zero ``deploy_status_code`` or a value of an ``error_output`` output, with Heat's
    reason."""
    values = dict(deployment.get("output_values") or {})
    failed = False
    reasons: dict[str, Any] = {}
    code = details.get(STATUS_CODE)
    if code and str(code) != "0":
        failed = True
        reasons[STATUS_CODE] = f"Deployment exited with non-zero status code: {code}"
    for output in outputs:
        name = output["name"]
        if name in details:
            values[name] = details[name]
            if output.get("error_output"):
                failed = True
                reasons[name] = details[name]
    for name in DEPLOY_OUTPUTS:
        values[name] = details.get(name)
    if failed:
        reason = ", ".join(f"{key} : {value}" for key, value in reasons.items())
        return {"output_values": values, "status": FAILED, "status_reason": reason}
    return {"output_values": values, "status": COMPLETE, "status_reason": "Outputs received"}


def signal_summary(deployment_id: str, details: Mapping[str, Any],
                   outputs: Sequence[Mapping[str, Any]]) -> str:
    """The SIGNAL event's words for it (Heat's ``event_reason``)."""
    code = details.get(STATUS_CODE)
    summary = (f"deployment {deployment_id} failed ({code})" if code and str(code) != "0"
               else f"deployment {deployment_id} succeeded")
    if any(o["name"] in details and o.get("error_output") for o in outputs):
        summary = f"deployment {deployment_id} failed"
    return summary


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
        # As Heat: run the deployment for DELETE when it is triggered for it (a config
        # gone meanwhile skips it), then remove the rows.
        try:
            return self._handle_action(Action.DELETE)
        except SoftwareConfigNotFound:
            return None

    def check_delete_complete(self, token: Token) -> bool:
        if token and self.physical_id is not None:
            store = self.runtime.software_configs()
            if store.get_deployment(self.physical_id) is not None \
                    and not self._check_complete(token):
                return False
        self._delete_rows()
        return True

    # --- signals -------------------------------------------------------------------------

    def handle_signal(self, details: Mapping[str, Any] | None,
                      received: Sequence[Mapping[str, Any]]) -> Signal:
        """Kept as sent; applied to the deployment by the worker at its next look."""
        if self.physical_id is None:
            raise BadRequest(reason="deployment_id must be specified")
        body = dict(details or {})
        return Signal(body, signal_summary(self.physical_id, body,
                                           self.data.get("outputs") or []))

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
        if not self._triggered(action, source):
            return None
        transport = self.properties["signal_transport"]
        derived = self._create_derived(store, action, source)
        waits = transport != NO_SIGNAL
        changes = {"config_id": derived["id"], "action": action,
                   "input_values": self.properties.get("input_values"),
                   "status": IN_PROGRESS if waits else COMPLETE,
                   "status_reason": "Deploy data available" if waits
                   else "Not waiting for outputs signal"}
        # Signals sent before this action are not its outcome.
        self.data["signals_seen"] = len(self.runtime.signals())
        if self.physical_id is None:
            deployment_id = str(uuid.uuid5(_IDS, self.runtime.resource_key))
            store.create_deployment(deployment_id, server_id=str(self.properties["server"]),
                                    **changes)
            self.set_physical_id(deployment_id)
        else:
            previous = store.get_deployment(self.physical_id)
            if previous is None:
                raise SoftwareDeploymentNotFound(id=self.physical_id)
            store.update_deployment(self.physical_id, changes)
            if previous["config_id"] != derived["id"]:
                self._delete_config(store, previous["config_id"])
        return {"deployment": self.physical_id} if waits else None

    def _check_complete(self, token: Token) -> bool:
        if not token:
            return True
        store = self.runtime.software_configs()
        deployment_id = str(token["deployment"])
        self._apply_signals(store, deployment_id)
        deployment = store.get_deployment(deployment_id)
        if deployment is None:
            raise SoftwareDeploymentNotFound(id=deployment_id)
        if deployment["status"] == COMPLETE:
            self.data["output_values"] = deployment.get("output_values") or {}
            return True
        if deployment["status"] == FAILED:
            self.data["output_values"] = deployment.get("output_values") or {}
            raise Error(f"Deployment to server failed: {deployment['status_reason']}")
        return False

    def _apply_signals(self, store: SoftwareConfigStore, deployment_id: str) -> None:
        """Apply the signals that arrived since the action began, in order; one that
        finds the deployment no longer in progress changes nothing (Heat's rule)."""
        signals = self.runtime.signals()
        seen = int(self.data.get("signals_seen", 0))
        for details in signals[seen:]:
            deployment = store.get_deployment(deployment_id)
            if deployment is not None and deployment["status"] == IN_PROGRESS:
                store.update_deployment(deployment_id, signal_outcome(
                    deployment, details, self.data.get("outputs") or []))
        self.data["signals_seen"] = len(signals)

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
                        source: Mapping[str, Any]) -> Mapping[str, Any]:
        inputs = self._derived_inputs(action, source)
        # One id per derived config of this deployment: a resumed action (its data not
        # saved) finds the config it made.
        count = int(self.data.get("derived", 0))
        config_id = str(uuid.uuid5(_IDS, f"{self.runtime.resource_key}/config/{count}"))
        self.data["derived"] = count + 1
        return store.create_config(
            config_id=config_id,
            name=self.properties.get("name") or source.get("name")
            or self.physical_resource_name(),
            group=source.get("group") or UNGROUPED,
            config=self.derived_config(source, inputs) or self.empty_config(),
            inputs=inputs, outputs=list(source.get("outputs") or []),
            options=source.get("options"))

    def _derived_inputs(self, action: str, source: Mapping[str, Any]) -> list[dict[str, Any]]:
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
            token = self._signal_token()
            deploy("deploy_signal_id", token["signed_url"],
                   "ID of signal to use for signaling output values")
            deploy("deploy_signal_verb", "PUT" if transport == TEMP_URL_SIGNAL else "POST",
                   "HTTP verb to use for signaling output values")
        elif transport == HEAT_SIGNAL:
            token = self._signal_token()
            deploy("deploy_auth_url", token["url"].split("/stacks/", 1)[0],
                   "URL for API authentication")
            deploy("deploy_username", token["id"], "Username for API authentication")
            deploy("deploy_user_id", token["id"], "User ID for API authentication")
            deploy("deploy_password", token["secret"], "Password for API authentication")
            deploy("deploy_project_id", runtime.tenant_id,
                   "ID of project for API authentication")
            deploy("deploy_region_name", None, "Region name for API authentication")
        return inputs

    def _signal_token(self) -> dict[str, str]:
        """The resource's signal token, issued once and kept for every action."""
        token = self.data.get("signal")
        if token is None:
            issued = self.runtime.issue_signal_token()
            token = {"id": issued.id, "secret": issued.secret, "url": issued.url,
                     "signed_url": issued.signed_url}
            self.data["signal"] = token
        return dict(token)

    def _delete_rows(self) -> None:
        """The deployment, its derived config and the signal token (Heat's
        ``_delete_resource``)."""
        if self.physical_id is not None:
            store = self.runtime.software_configs()
            deployment = store.get_deployment(self.physical_id)
            if deployment is not None:
                store.delete_deployment(self.physical_id)
                self._delete_config(store, deployment["config_id"])
        self.runtime.revoke_signal_tokens()

    @staticmethod
    def _delete_config(store: SoftwareConfigStore, config_id: str) -> None:
        store.delete_config(config_id)


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
