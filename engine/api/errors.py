"""The only mapping from errors to HTTP, and Heat's fault body for every error.

``KilnError`` categories map to statuses by walking the exception's MRO, never by class
name. Falcon's own errors (unknown route, wrong method) get the same body. Anything else is
a bug in Kiln: a 500 with the request id, and the traceback goes to the log, not the client.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import falcon

from engine import errors

LOG = logging.getLogger(__name__)

STATUS_BY_CATEGORY: dict[type[errors.KilnError], int] = {
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.Invalid: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.Unavailable: 503,
    errors.BackendFailed: 502,
}

TITLES: dict[int, tuple[str, str]] = {
    400: ("Bad Request", "The server could not comply with the request since it is either "
                         "malformed or otherwise incorrect."),
    401: ("Unauthorized", "This server could not verify that you are authorized to access "
                          "the document you requested."),
    403: ("Forbidden", "Access was denied to this resource."),
    404: ("Not Found", "The resource could not be found."),
    405: ("Method Not Allowed", "The method is not allowed for this resource."),
    409: ("Conflict", "There was a conflict when trying to complete your request."),
    500: ("Internal Server Error", "The server has either erred or is incapable of performing "
                                   "the requested operation."),
    # webob's HTTPNotImplemented: its own title, the explanation of every 5xx.
    501: ("Not Implemented", "The server has either erred or is incapable of performing "
                             "the requested operation."),
    502: ("Bad Gateway", "The server received an invalid response from a backend it "
                         "called."),
    503: ("Service Unavailable", "The server is currently unavailable. Please try again at a "
                                 "later time."),
}


def status_of(error: errors.KilnError) -> int:
    for cls in type(error).__mro__:
        if cls in STATUS_BY_CATEGORY:
            return STATUS_BY_CATEGORY[cls]
    return 500


def fault_body(code: int, error_type: str, message: str | None,
               traceback: str | None = None) -> dict[str, Any]:
    title, explanation = TITLES.get(code, (str(code), ""))
    error: dict[str, Any] = {"type": error_type, "traceback": traceback}
    if message is not None:
        error["message"] = message
    return {"code": code, "title": title, "explanation": explanation, "error": error}


def _write(resp: falcon.Response, code: int, body: dict[str, Any]) -> None:
    resp.status = code
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(body)


def handle_kiln_error(req: falcon.Request, resp: falcon.Response, error: errors.KilnError,
                      _params: Any) -> None:
    code = status_of(error)
    # A refusal to queue more work is the API working as meant: under load it answers
    # many, each in the access log already.
    if code >= 500 and not isinstance(error, errors.BacklogFull):
        LOG.warning("request %s: %s", _request_id(req), error)
    _write(resp, code, fault_body(code, error.api_type or type(error).__name__, str(error)))
    if isinstance(error, errors.Unavailable) and error.retry_after is not None:
        # keystoneauth (under heatclient and the openstack CLI) waits this long before
        # it retries a 503, when its status_code_retries allow a retry.
        resp.set_header("Retry-After", str(error.retry_after))


def handle_http_error(req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError,
                      _params: Any) -> None:
    code = error.status_code
    message = error.description or error.title
    _write(resp, code, fault_body(code, _status_class_name(error), message))
    if error.headers:
        resp.set_headers(error.headers)  # a mapping or (name, value) pairs


def _status_class_name(error: falcon.HTTPError) -> str:
    """The per-status class (``HTTPNotFound``), not a refinement such as
    ``HTTPRouteNotFound``: those are the names Heat's clients have always seen."""
    mro = type(error).__mro__
    return mro[mro.index(falcon.HTTPError) - 1].__name__ if mro[0] is not falcon.HTTPError \
        else "HTTPError"


def handle_unexpected(req: falcon.Request, resp: falcon.Response, error: Exception,
                      _params: Any) -> None:
    if isinstance(error, falcon.HTTPError):
        handle_http_error(req, resp, error, _params)
        return
    request_id = _request_id(req)
    LOG.error("request %s failed", request_id, exc_info=error)
    _write(resp, 500, fault_body(
        500, type(error).__name__,
        f"Kiln failed unexpectedly; the operator can find request {request_id} in its log."))


def _request_id(req: falcon.Request) -> str:
    return str(getattr(req.context, "request_id", ""))


def register(app: falcon.App[falcon.Request, falcon.Response]) -> None:
    # NOTE: Falcon picks the most specific handler by MRO, so order does not matter.
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(errors.KilnError, handle_kiln_error)
