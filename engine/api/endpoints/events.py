"""Events of a stack and of one of its resources."""

from __future__ import annotations

import falcon

from engine.api import views
from engine.api.requests import base_url, context, integer, multi, sort_dir
from engine.errors import NoEventsFound
from engine.services.events import EVENT_FILTERS, EventQuery, StackEvents


def _query(req: falcon.Request) -> EventQuery:
    # Heat's default order is newest first; clients send sort_dir=asc. Unknown query
    # keys are ignored, as Heat ignores them here.
    return EventQuery(filters=multi(req, names=EVENT_FILTERS), limit=integer(req, "limit"),
                      marker=req.get_param("marker"),
                      sort_keys=tuple(req.get_param_as_list("sort_keys") or ()),
                      sort_dir=sort_dir(req))


def _nested_depth(req: falcon.Request) -> int:
    """With ``nested_depth`` > 0 the nested stacks' events are listed too, and every
    event has a ``root_stack`` link: clients take it as the sign that the server lists
    nested events itself."""
    return integer(req, "nested_depth") or 0


class EventCollection:
    def __init__(self, events: StackEvents) -> None:
        self._events = events

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str) -> None:
        depth = _nested_depth(req)
        records = self._events.list_events(context(req), stack_name, stack_id, _query(req),
                                           nested_depth=depth)
        base = base_url(req, tenant_id)
        resp.media = {"events": [views.event(base, stack_name, stack_id, e, detail=False,
                                             root_stack=depth > 0)
                                 for e in records]}


class ResourceEventCollection:
    def __init__(self, events: StackEvents) -> None:
        self._events = events

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, resource_name: str) -> None:
        depth = _nested_depth(req)
        records = self._events.list_events(context(req), stack_name, stack_id, _query(req),
                                           resource_name=resource_name)
        if not records:
            raise NoEventsFound(resource_name=resource_name)
        base = base_url(req, tenant_id)
        resp.media = {"events": [views.event(base, stack_name, stack_id, e, detail=False,
                                             root_stack=depth > 0)
                                 for e in records]}


class EventItem:
    def __init__(self, events: StackEvents) -> None:
        self._events = events

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               stack_name: str, stack_id: str, resource_name: str, event_id: str) -> None:
        record = self._events.get_event(context(req), stack_name, stack_id, resource_name,
                                        event_id)
        resp.media = {"event": views.event(base_url(req, tenant_id), stack_name, stack_id,
                                           record, detail=True)}
