"""``OS::Heat::WaitConditionHandle`` and ``OS::Heat::WaitCondition``: a stack that waits for
signals sent to Kiln's own API, without holding a thread.

The handle issues a signal token (``Runtime.issue_signal_token``: Kiln stores its hash and
accepts it on the handle's signal URL only) and shows the URL and the token as attributes.
Each ``POST`` to that URL is validated and normalised by ``handle_signal`` as Heat does it,
and Kiln keeps what it returns with the handle. The wait condition reads those signals at
each poll (``Runtime.find_signalled_resource``) until enough arrived, one failed, or its
deadline passed. Both keep Heat's names, data shapes and reasons.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from engine.errors import BadRequest, StackValidationFailed
from engine.resources.base import Resource, Signal, SignalledResource, Token
from engine.schema import INTEGER, NUMBER, STRING, AllowedValues, Attribute, Property, Range
from engine.vocabulary import SignalTransport

SUCCESS, FAILURE = "SUCCESS", "FAILURE"
#: The keys of a normalised signal, as Heat checks them (``_metadata_format_ok``).
SIGNAL_KEYS = frozenset({"data", "reason", "status", "id"})
TOKEN_SIGNAL = SignalTransport.TOKEN_SIGNAL.value
SIGNAL_TRANSPORTS = tuple(t.value for t in SignalTransport)


def merged_signals(signals: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Stored signals by id, as Heat's handle metadata holds them: a later signal with the
    same id replaces the earlier one where it stood."""
    merged: dict[str, dict[str, Any]] = {}
    for signal in signals:
        merged[str(signal["id"])] = {key: signal.get(key)
                                     for key in ("data", "reason", "status")}
    return merged


class WaitConditionHandle(Resource):
    """Resource for managing instance signals.

    The main points of this resource are:
      - have no dependencies (so the instance can reference it).
      - create credentials to allow for signalling from the instance.
      - handle signals from the instance, validate and store result.
    """

    support_version: ClassVar[str] = "2014.2"
    # An adopt issues its own token: abandon data without this one loses nothing.
    secret_data: ClassVar[frozenset[str]] = frozenset({"token"})

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "signal_transport": Property(
            STRING,
            "How the client will signal the wait condition. CFN_SIGNAL will allow an HTTP "
            "POST to a CFN keypair signed URL. TEMP_URL_SIGNAL will create a Swift TempURL "
            "to be signalled via HTTP PUT. HEAT_SIGNAL will allow calls to the Heat API "
            "resource-signal using the provided keystone credentials. ZAQAR_SIGNAL will "
            "create a dedicated zaqar queue to be signalled using the provided keystone "
            "credentials. TOKEN_SIGNAL will allow and HTTP POST to a Heat API endpoint with "
            "the provided keystone token. NO_SIGNAL will result in the resource going to a "
            "signalled state without waiting for any signal.",
            default=TOKEN_SIGNAL, constraints=(AllowedValues(SIGNAL_TRANSPORTS),),
        ),
    }

    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "token": Attribute(
            "Token for stack-user which can be used for signalling handle when "
            "signal_transport is set to TOKEN_SIGNAL. None for all other signal transports.",
            type=STRING,
        ),
        "endpoint": Attribute(
            "Endpoint/url which can be used for signalling handle when signal_transport is "
            "set to TOKEN_SIGNAL. None for all other signal transports.",
            type=STRING,
        ),
        "curl_cli": Attribute(
            "Convenience attribute, provides curl CLI command prefix, which can be used for "
            "signalling handle completion or failure when signal_transport is set to "
            "TOKEN_SIGNAL. You can signal success by adding --data-binary '{\"status\": "
            "\"SUCCESS\"}' , or signal failure by adding --data-binary '{\"status\": "
            "\"FAILURE\"}'. This attribute is set to None for all other signal transports.",
            type=STRING,
        ),
        "signal": Attribute(
            "JSON serialized map that includes the endpoint, token and/or other attributes "
            "the client must use for signalling this handle. The contents of this map "
            "depend on the type of signal selected in the signal_transport property.",
            type=STRING,
        ),
    }

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        transport = properties.get("signal_transport")
        if transport != TOKEN_SIGNAL:
            raise StackValidationFailed(
                reason=f"Property error: signal_transport: {transport} is not supported by "
                       f"Kiln, which takes signals on its own API only: use {TOKEN_SIGNAL}")

    def handle_create(self) -> Token:
        # A resumed create whose token was recorded keeps it: set_physical_id wrote the
        # id and the token in one transaction.
        if self.physical_id is None or "token" not in self.data:
            self.set_physical_id(self._issue_token())
        return None

    def handle_delete(self) -> Token:
        self.runtime.revoke_signal_tokens()
        return None

    def handle_adopt(self, resource_id: str | None, resource_data: Mapping[str, Any]) -> Token:
        # The abandoned stack's token went with its rows: issue one for this stack.
        self.data.update(resource_data)
        token_id = self._issue_token()
        self.set_physical_id(resource_id or token_id)
        return None

    def _issue_token(self) -> str:
        issued = self.runtime.issue_signal_token()
        self.data["token"], self.data["endpoint"] = issued.secret, issued.url
        return issued.id

    def get_attribute(self, name: str) -> Any:
        if self.physical_id is None:
            return None
        token, endpoint = self.data.get("token"), self.data.get("endpoint")
        if name == "token":
            return token
        if name == "endpoint":
            return endpoint
        if name == "curl_cli":
            if token is None or endpoint is None:
                return None
            return (f"curl -i -X POST -H 'X-Auth-Token: {token}' "
                    "-H 'Content-Type: application/json' -H 'Accept: application/json' "
                    f"{endpoint}")
        if name == "signal":
            # NOTE: Heat 27 has no TOKEN_SIGNAL case in SignalResponder._get_signal, so
            # this is the JSON of None there too.
            return json.dumps(None)
        return None

    def handle_signal(self, details: Mapping[str, Any] | None,
                      received: Sequence[Mapping[str, Any]]) -> Signal:
        """Heat's rules: missing keys are defaulted (``status`` SUCCESS, ``reason``
        "Signal <n> received", ``data`` null, ``id`` n, where n counts the distinct ids
        so far plus one); other keys, or another status, are refused."""
        number = len(merged_signals(received)) + 1
        entry = dict(details or {})
        entry.setdefault("reason", f"Signal {number} received")
        entry.setdefault("data", None)
        entry.setdefault("id", number)
        entry.setdefault("status", SUCCESS)
        if set(entry) != SIGNAL_KEYS or entry["status"] not in (SUCCESS, FAILURE):
            raise BadRequest(reason="Metadata format invalid: a wait condition signal has "
                                    "the keys data, id, reason and status only, and its "
                                    "status is SUCCESS or FAILURE")
        stored = {"id": str(entry["id"]), "status": entry["status"],
                  "reason": entry["reason"], "data": entry["data"]}
        return Signal(stored, summary=f"status:{entry['status']} reason:{entry['reason']}")


class WaitConditionFailure(Exception):  # noqa: N818 -- Heat's name, in the failure reason
    """A FAILURE signal arrived; the message is the failure reasons joined by ``;``."""


class WaitConditionTimeout(Exception):  # noqa: N818 -- Heat's name, in the failure reason
    """The deadline passed before ``count`` signals arrived."""


class WaitCondition(Resource):
    """Resource for handling signals received by WaitConditionHandle.

    Resource takes WaitConditionHandle and starts to create. Resource is in
    CREATE_IN_PROGRESS status until WaitConditionHandle doesn't receive sufficient number
    of successful signals (this number can be specified with count property) and
    successfully creates after that, or fails due to timeout.
    """

    support_version: ClassVar[str] = "2014.2"

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "handle": Property(
            STRING,
            "A reference to the wait condition handle used to signal this wait condition.",
            required=True,
        ),
        "timeout": Property(
            NUMBER,
            "The number of seconds to wait for the correct number of signals to arrive.",
            required=True, constraints=(Range(min=1, max=43200),),
        ),
        "count": Property(
            INTEGER,
            "The number of success signals that must be received before the stack "
            "creation process continues.",
            default=1, update_allowed=True, constraints=(Range(min=1),),
        ),
    }

    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "data": Attribute(
            "JSON string containing data associated with wait condition signals sent to "
            "the handle.",
            type=STRING,
        ),
    }

    def handle_create(self) -> Token:
        return self._start()

    def check_create_complete(self, token: Token) -> bool:
        return self._waited(token)

    def handle_update(self, prop_diff: Mapping[str, Any]) -> Token:
        # As Heat: wait again, for the new count, from now (signals already in count).
        return self._start()

    def check_update_complete(self, token: Token) -> bool:
        return self._waited(token)

    def get_attribute(self, name: str) -> Any:
        received = self.data.get("received")
        if name != "data" or received is None:
            return None
        # Kept as pairs: PostgreSQL's JSONB would reorder the keys of a map.
        return json.dumps(dict(received))

    def _start(self) -> dict[str, float]:
        self._record(self._handle())
        return {"deadline": self.runtime.now() + float(self.properties["timeout"])}

    def _waited(self, token: Token) -> bool:
        signals = self._record(self._handle())
        count = self.properties["count"]
        failures = [str(s["reason"]) for s in signals.values() if s["status"] != SUCCESS]
        if failures:
            raise WaitConditionFailure(";".join(failures))
        if len(signals) >= count:
            return True
        if self.runtime.now() > token["deadline"]:
            reasons = [str(s["reason"]) for s in signals.values() if s["status"] == SUCCESS]
            message = f"{len(reasons)} of {count} received"
            raise WaitConditionTimeout(message + (f" - {';'.join(reasons)}" if reasons
                                                  else ""))
        return False

    def _handle(self) -> SignalledResource:
        reference = str(self.properties["handle"])
        found = self.runtime.find_signalled_resource(reference)
        if found is None or not issubclass(found.resource_type, WaitConditionHandle):
            name = found.name if found is not None else reference
            raise ValueError(f"{name} is not a valid wait condition handle.")
        return found

    def _record(self, handle: SignalledResource) -> dict[str, dict[str, Any]]:
        """The handle's signals by id; their data is kept for the ``data`` attribute."""
        signals = merged_signals(handle.signals)
        self.data["received"] = [[key, entry["data"]] for key, entry in signals.items()]
        return signals
