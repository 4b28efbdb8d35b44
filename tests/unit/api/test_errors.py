"""engine.api.errors: one status table walked by MRO, and Heat's fault body for every error,
Falcon's own 404 and 405 included."""

from __future__ import annotations

from typing import Any

import falcon
import falcon.testing
import pytest

from engine import errors
from engine.api.errors import fault_body, register, status_of
from engine.errors import Location


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (errors.EntityNotFound(entity="Stack", name="s"), 404),
        (errors.ResourceNotFound(resource_name="r", stack_name="s"), 404),
        (errors.StackExists(stack_name="s"), 409),
        (errors.ActionInProgress(stack_name="s", action="CREATE"), 409),
        (errors.StackValidationFailed(reason="x"), 400),
        (errors.CircularDependency(cycle="a -> a"), 400),
        (errors.ResourceTypeNotFound(type_name="OS::Nope"), 400),
        (errors.UserParameterMissing(key="p"), 400),
        (errors.BadRequest(reason="x"), 400),
        (errors.RequestLimitExceeded(reason="x"), 400),
        (errors.LifecycleDenied(refusals="Lifecycle plugin p denied CREATE: x"), 400),
        (errors.AuthenticationRequired(reason="x"), 401),
        (errors.InvalidTenant(target="a", actual="b"), 403),
        (errors.DatabaseUnavailable(reason="x"), 503),
        (errors.SchemaBehind(current="a", head="b"), 503),
        (errors.BacklogFull(limit=2, retry_after=5), 503),
        (errors.PluginLoadFailed(name="p", namespace="n", reason="x"), 500),
        (errors.KilnError(), 500),
    ],
)
def test_status_of(exc: errors.KilnError, status: int) -> None:
    assert status_of(exc) == status


def test_status_of_a_subclass_defined_elsewhere_follows_its_category() -> None:
    class QuotaReached(errors.Conflict):
        msg_fmt = "quota"

    assert status_of(QuotaReached()) == 409


def test_fault_body_shape() -> None:
    body = fault_body(404, "EntityNotFound", "The Stack (nosuch) could not be found.")

    assert body == {
        "code": 404,
        "title": "Not Found",
        "explanation": "The resource could not be found.",
        "error": {"type": "EntityNotFound",
                  "message": "The Stack (nosuch) could not be found.",
                  "traceback": None},
    }


def test_fault_body_without_a_message_omits_the_key() -> None:
    body = fault_body(500, "KeyError", None)

    assert body["error"] == {"type": "KeyError", "traceback": None}
    assert body["title"] == "Internal Server Error"


def test_fault_body_for_a_status_without_a_title() -> None:
    body = fault_body(418, "Teapot", "short and stout")

    assert (body["code"], body["title"], body["explanation"]) == (418, "418", "")


# --- through a tiny Falcon app -----------------------------------------------------------


class RequestId:
    """Middleware stand-in: the real app puts the request id on the context."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = "req-0000"


class Raising:
    """GET raises whatever the test put in ``error``; POST reads a JSON body."""

    def __init__(self) -> None:
        self.error: Exception = errors.KilnError()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        raise self.error

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = req.get_media()


@pytest.fixture
def resource() -> Raising:
    return Raising()


@pytest.fixture
def client(resource: Raising) -> falcon.testing.TestClient:
    app = falcon.App(middleware=[RequestId()])
    register(app)
    app.add_route("/thing", resource)
    return falcon.testing.TestClient(app)


def envelope(result: falcon.testing.Result) -> dict[str, Any]:
    assert result.headers["content-type"] == "application/json"
    body = result.json
    assert set(body) == {"code", "title", "explanation", "error"}
    assert body["code"] == result.status_code
    assert body["error"]["traceback"] is None
    return body  # type: ignore[no-any-return]


def test_kiln_error_gets_its_status_type_and_located_message(
    client: falcon.testing.TestClient, resource: Raising
) -> None:
    resource.error = errors.ResourceTypeNotFound(Location("resources.b.type", 7),
                                                 type_name="OS::Nope")

    result = client.simulate_get("/thing")

    assert result.status_code == 400
    body = envelope(result)
    assert body["title"] == "Bad Request"
    assert body["error"]["type"] == "ResourceTypeNotFound"
    assert body["error"]["message"] == (
        "template:7 resources.b.type: The Resource Type (OS::Nope) could not be found."
    )


def test_not_found_error(client: falcon.testing.TestClient, resource: Raising) -> None:
    resource.error = errors.EntityNotFound(entity="Stack", name="nosuch")

    result = client.simulate_get("/thing")

    assert result.status_code == 404
    assert envelope(result) == fault_body(404, "EntityNotFound",
                                          "The Stack (nosuch) could not be found.")


@pytest.mark.parametrize(("error", "message"), [
    (errors.OutputNotFound(key="nosuch"), "Specified output key nosuch not found."),
    (errors.SoftwareConfigNotFound(id="c1"), "Software config with id c1 not found"),
    (errors.SoftwareDeploymentNotFound(id="d1"), "Deployment with id d1 not found"),
])
def test_what_heat_raises_its_generic_not_found_for_has_heats_type_and_words(
        client: falcon.testing.TestClient, resource: Raising, error: errors.KilnError,
        message: str) -> None:
    # Heat's show_output and its software config and deployment lookups raise its
    # generic NotFound, whose name the body carries.
    resource.error = error

    result = client.simulate_get("/thing")

    assert result.status_code == 404
    assert envelope(result) == fault_body(404, "NotFound", message)


def test_conflict_error(client: falcon.testing.TestClient, resource: Raising) -> None:
    resource.error = errors.StackExists(stack_name="s1")

    result = client.simulate_get("/thing")

    assert result.status_code == 409
    assert envelope(result)["explanation"] == (
        "There was a conflict when trying to complete your request."
    )


def test_a_request_limit_gets_heats_bad_request_body(
    client: falcon.testing.TestClient, resource: Raising
) -> None:
    # Heat's fault middleware maps RequestLimitExceeded to HTTPBadRequest, sizes included.
    resource.error = errors.RequestLimitExceeded(
        reason="Maximum resources per stack exceeded.")

    result = client.simulate_get("/thing")

    assert result.status_code == 400
    assert envelope(result) == fault_body(
        400, "RequestLimitExceeded",
        "Request limit exceeded: Maximum resources per stack exceeded.")
    assert result.json["title"] == "Bad Request"


def test_a_full_backlog_is_a_503_with_retry_after_and_no_warning(
    client: falcon.testing.TestClient, resource: Raising, caplog: pytest.LogCaptureFixture
) -> None:
    resource.error = errors.BacklogFull(limit=200, retry_after=7)

    with caplog.at_level("WARNING", logger="engine.api.errors"):
        result = client.simulate_get("/thing")

    assert result.status_code == 503
    # keystoneauth reads whole seconds (int()) before it retries a 503.
    assert result.headers["retry-after"] == "7"
    body = envelope(result)
    assert (body["title"], body["error"]["type"]) == ("Service Unavailable", "BacklogFull")
    assert "try again in 7 seconds" in body["error"]["message"]
    # The API working as meant, under load many times a second: the access line is enough.
    assert caplog.records == []


def test_another_503_has_no_retry_after(
    client: falcon.testing.TestClient, resource: Raising
) -> None:
    resource.error = errors.DatabaseUnavailable(reason="gone")

    result = client.simulate_get("/thing")

    assert result.status_code == 503
    assert "retry-after" not in result.headers


def test_unexpected_exception_is_a_500_without_details(
    client: falcon.testing.TestClient, resource: Raising
) -> None:
    resource.error = ValueError("secret internals")

    result = client.simulate_get("/thing")

    assert result.status_code == 500
    body = envelope(result)
    assert body["error"]["type"] == "ValueError"
    assert "secret internals" not in result.text
    assert body["error"]["message"] == (
        "Kiln failed unexpectedly; the operator can find request req-0000 in its log."
    )


def test_falcon_http_error_raised_by_an_endpoint(
    client: falcon.testing.TestClient, resource: Raising
) -> None:
    resource.error = falcon.HTTPBadRequest(description="No stack name specified")

    result = client.simulate_get("/thing")

    assert result.status_code == 400
    body = envelope(result)
    assert body["error"]["type"] == "HTTPBadRequest"
    assert body["error"]["message"] == "No stack name specified"


def test_unknown_route_gets_the_heat_envelope(client: falcon.testing.TestClient) -> None:
    result = client.simulate_get("/nope")

    assert result.status_code == 404
    body = envelope(result)
    assert body["title"] == "Not Found"
    assert body["explanation"] == "The resource could not be found."
    assert body["error"]["type"] == "HTTPNotFound"
    assert body["error"]["message"] == "404 Not Found"


def test_wrong_method_gets_405_the_envelope_and_allow(client: falcon.testing.TestClient
                                                      ) -> None:
    result = client.simulate_delete("/thing")

    assert result.status_code == 405
    body = envelope(result)
    assert body["title"] == "Method Not Allowed"
    assert body["error"]["type"] == "HTTPMethodNotAllowed"
    assert set(result.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST",
                                                                        "OPTIONS"}


def test_malformed_json_is_a_400_in_the_envelope(client: falcon.testing.TestClient) -> None:
    result = client.simulate_post("/thing", body="{not json",
                                  headers={"Content-Type": "application/json"})

    assert result.status_code == 400
    body = envelope(result)
    assert body["title"] == "Bad Request"
    assert issubclass(getattr(falcon, body["error"]["type"]), falcon.HTTPBadRequest)
