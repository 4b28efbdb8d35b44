"""Heat's answers that carry no document of their own, shaped in one place.

Heat's controllers raise webob's ``HTTPAccepted`` (update), ``HTTPFound`` (lookups) and
``HTTPNoContent`` (delete, ``OPTIONS``), and webob renders them: a 202 or 302 gets webob's
status document, which for a client asking for JSON (heatclient, keystoneauth and the
openstack CLI all send ``Accept: application/json``) is ``{"message", "code", "title"}``
with ``code`` the status line; a 204 gets neither body nor ``Content-Type``. An action, a
signal or a mark-unhealthy returns None, which Heat's serializer writes as 200 ``null``.

Falcon, left to itself, answers a 202, 302 or ``OPTIONS`` with ``Content-Type:
application/json`` and an empty body, which is no JSON: python-heatclient then logs
"Could not decode response body as JSON" at ERROR for every update and lookup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import falcon

# webob's default body template (``${explanation}<br /><br />\n${detail}\n${html_comment}
# \n``) and _HTTPMove's, with no detail or comment, as webob fills them for JSON: unescaped.
ACCEPTED_MESSAGE = "The request is accepted for processing.<br /><br />\n\n\n"
FOUND_MESSAGE = ('The resource was found at <a href="{location}">{location}</a>;\n'
                 "you should be redirected automatically.\n\n")


def accepted(resp: falcon.Response) -> None:
    """202 with webob's ``HTTPAccepted`` document."""
    _status_document(resp, falcon.HTTP_202, "Accepted", ACCEPTED_MESSAGE)


def found(resp: falcon.Response, location: str) -> None:
    """302 to ``location`` with webob's ``HTTPFound`` document, which names the Location
    as sent (Falcon percent-encodes what a header may not hold)."""
    resp.location = location
    sent = resp.location or location
    _status_document(resp, falcon.HTTP_302, "Found", FOUND_MESSAGE.format(location=sent))


def no_content(resp: falcon.Response) -> None:
    """204: Falcon sends no body and, as long as nothing set one, no ``Content-Type``."""
    resp.status = falcon.HTTP_204


def allowed(resp: falcon.Response, methods: Iterable[str]) -> None:
    """``OPTIONS``: 204 with ``Allow``, as Heat's ``DefaultMethodController.options``."""
    no_content(resp)
    resp.set_header("Allow", ", ".join(methods))


def json_null(resp: falcon.Response) -> None:
    """200 with the JSON literal ``null`` (Falcon writes no body for ``media = None``)."""
    resp.content_type = falcon.MEDIA_JSON
    resp.text = "null"


def _status_document(resp: falcon.Response, status: str, title: str, message: str) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps({"message": message, "code": status, "title": title})
