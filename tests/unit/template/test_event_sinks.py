"""engine.template.event_sinks: a webhook sink is checked as it is read (any other type is
a 400 naming the sink), its secret is masked wherever an environment is shown, and a
target is shown without what may carry a credential."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import BadRequest
from engine.template import event_sinks
from engine.template.environment import parse_environment
from engine.template.stored_parameters import masked_environment

SINK = {"type": "webhook", "target": "https://hooks.example.com/kiln", "secret": "s3cret"}
HOT = {"heat_template_version": "2018-08-31",
       "parameters": {"pw": {"type": "string", "hidden": True}}}


@pytest.mark.parametrize(("sink", "message"), [
    ({"type": "zaqar-queue", "target": "q"},
     'The event sink type "zaqar-queue" (event_sinks[1] in environment) is not supported '
     'by Kiln, which has no Zaqar; use "webhook"'),
    ({**SINK, "ttl": 60},
     "Unknown key(s) ttl in event_sinks[1] in environment; a webhook sink takes type, "
     "target, secret"),
    ({**SINK, "target": "ftp://example.com/x"},
     'The target "ftp://example.com/x" of event_sinks[1] in environment is not an http or '
     "https URL with a host"),
    ({**SINK, "target": "http://:80/x"},
     'The target "http://:80/x" of event_sinks[1] in environment is not an http or https URL '
     "with a host"),
    ({**SINK, "target": "https://me:pw@example.com/"},
     "The target of event_sinks[1] in environment may not carry a user name or password; "
     "the receiver checks the secret's signature"),
    ({"type": "webhook", "target": "https://example.com/"},
     "event_sinks[1] in environment needs a secret: a string of 1 to 1024 characters to "
     "sign its requests with"),
    ({**SINK, "secret": "******"},
     "The secret of event_sinks[1] in environment is the mask shown in its place; give the "
     "secret itself"),
    ({**SINK, "target": 7},
     "event_sinks[1] in environment needs a target: an http or https URL of at most 2048 "
     "characters"),
    ("webhook", "Each event sink in environment must be a map with a type"),
])
def test_a_sink_other_than_a_whole_webhook_is_refused_naming_it(sink: Any,
                                                                message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_environment({"event_sinks": [SINK, sink]})

    assert caught.value.message == message


def test_the_operators_schemes_narrow_what_a_target_may_use() -> None:
    rules = event_sinks.SinkRules(schemes=("https",))
    event_sinks.check_rules([SINK], rules)
    with pytest.raises(BadRequest) as caught:
        event_sinks.check_rules([SINK, {**SINK, "target": "http://h/"}], rules)

    assert caught.value.message == ('The scheme "http" of event_sinks[1] is not allowed '
                                    "here; allowed: https")


def test_a_stack_may_name_only_so_many_sinks() -> None:
    assert event_sinks.SinkRules().max_per_stack == 5, "[event_sinks] max_per_stack"
    rules = event_sinks.SinkRules(max_per_stack=2)
    event_sinks.check_rules([SINK, SINK], rules)
    with pytest.raises(BadRequest) as caught:
        event_sinks.check_rules([SINK, SINK, SINK], rules)

    assert caught.value.message == ("Too many event sinks (event_sinks in environment): 3 "
                                    "given, at most 2 per stack")


def test_stored_sinks_no_longer_allowed_are_dropped_with_their_reasons() -> None:
    """What an update keeps of a stack's stored sinks it does not name again: a sink
    stored before sinks were checked, or before the operator narrowed the rules, is
    dropped, not refused."""
    zaqar = {"type": "zaqar-queue", "target": "q"}
    plain = {**SINK, "target": "http://hooks.example.com/"}
    rules = event_sinks.SinkRules(schemes=("https",), max_per_stack=1)

    kept, dropped = event_sinks.carried([zaqar, plain, SINK, SINK], rules)

    assert kept == [SINK]
    assert dropped == [
        'The event sink type "zaqar-queue" (event_sinks[0] of the stored environment) is '
        'not supported by Kiln, which has no Zaqar; use "webhook"',
        'The scheme "http" of event_sinks[1] of the stored environment is not allowed '
        "here; allowed: https",
        "event_sinks[3] of the stored environment is beyond the 1 a stack may have"]
    assert event_sinks.carried(None, rules) == ([], [])


def test_every_view_of_an_environment_masks_the_secret() -> None:
    stored = {"parameters": {"pw": "hunter2"}, "event_sinks": [SINK]}

    shown = masked_environment(HOT, stored)

    assert shown["event_sinks"] == [{**SINK, "secret": "******"}]
    assert shown["parameters"] == {"pw": "******"}
    assert stored["event_sinks"] == [SINK], "the stored environment is left as it is"


def test_a_target_is_shown_without_credentials_or_query() -> None:
    assert event_sinks.shown_target("https://u:p@[::1]:8443/hook?token=x") == (
        "https://[::1]:8443/hook")
    assert event_sinks.shown_target("http://[bad") == "<not a URL>"
