"""engine.api.requests: JSON bodies and query integers read as Heat reads them, refusing
what Kiln could not store (or walk) with a 4xx rather than failing later with a 500."""

from __future__ import annotations

from typing import Any

import falcon
import falcon.testing
import pytest

from engine.api import middleware
from engine.api.requests import MAX_BODY_DEPTH, integer, json_body
from engine.errors import BadRequest, RequestLimitExceeded


def body_request(raw: bytes) -> falcon.Request:
    req = falcon.testing.create_req(method="POST", path="/", body=raw,
                                    headers={"Content-Type": "application/json"})
    req.context.max_body_bytes = 1 << 20
    return req


def query_request(query: str) -> falcon.Request:
    return falcon.testing.create_req(path="/", query_string=query)


def test_a_plain_body_is_read() -> None:
    raw = b'{"a": [1, 2.5, "\\u2603", null, true], "b": {"c": -1e300}}'

    assert json_body(body_request(raw)) == {"a": [1, 2.5, "\u2603", None, True],
                                           "b": {"c": -1e300}}


@pytest.mark.parametrize("raw, reason", [
    (b'{"a": NaN}', "NaN is not a JSON number"),
    (b'{"a": -Infinity}', "-Infinity is not a JSON number"),
    (b'{"a": 1e400}', "1e400 is out of range for a number"),
    (b'{"a": ' + b"9" * 4301 + b"}", "Exceeds the limit (4300 digits)"),
])
def test_numbers_json_does_not_have_are_refused(raw: bytes, reason: str) -> None:
    with pytest.raises(BadRequest) as caught:
        json_body(body_request(raw))

    assert caught.value.message.startswith("The request body is not valid JSON: ")
    assert reason in caught.value.message


@pytest.mark.parametrize("raw, where", [
    (b'{"parameters": {"p": "a\\u0000b"}}', "parameters.p"),
    (b'{"files": {"\\u0000": "x"}}', "files.\x00"),
    (b'{"tags": ["ok", "\\ud800"]}', "tags[1]"),
    (b'{"a": "\xed\xa0\x80"}', "a"),  # a surrogate written as UTF-8 bytes
    (b'"\\u0000"', "the body"),
])
def test_text_no_database_stores_is_refused_naming_where(raw: bytes, where: str) -> None:
    with pytest.raises(BadRequest) as caught:
        json_body(body_request(raw))

    assert caught.value.message == (f"The request body has a NUL character or an unpaired "
                                    f"surrogate in {where}; Kiln cannot store such text.")


def nested(depth: int) -> bytes:
    return b'{"a": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def test_nesting_is_bounded_below_what_recursive_walks_survive() -> None:
    assert json_body(body_request(nested(MAX_BODY_DEPTH)))

    for depth in (MAX_BODY_DEPTH + 1, 100_000):
        with pytest.raises(RequestLimitExceeded) as caught:
            json_body(body_request(nested(depth)))
        assert caught.value.message == ("Request limit exceeded: The request body nests too "
                                        "deeply.")


@pytest.mark.parametrize("raw", [b"[]", b'"s"', b"null", b"1"])
def test_a_body_that_is_not_an_object_is_refused(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="must be a JSON object"):
        json_body(body_request(raw))


@pytest.mark.parametrize("value, expected", [
    ("0", 0), ("5", 5), ("9223372036854775807", 2**63 - 1),
])
def test_integer(value: str, expected: int) -> None:
    assert integer(query_request(f"limit={value}"), "limit") == expected
    assert integer(query_request(""), "limit") is None


@pytest.mark.parametrize("value", ["1.5", "%201", "1e3", "x", "", "%D9%A1", "9" * 5000,
                                   "+1", "1_0"])
def test_integer_is_the_text_of_an_integer(value: str) -> None:
    with pytest.raises(BadRequest) as caught:
        integer(query_request(f"limit={value}&keep_blank=1"), "limit")

    assert caught.value.message == "Only integer is acceptable by 'limit'."


@pytest.mark.parametrize("value, message", [
    ("-1", "Value '-1' is invalid for 'limit' which only accepts non-negative integer."),
    ("9223372036854775808", "Value '9223372036854775808' is invalid for 'limit' which only "
                            "accepts integers up to 9223372036854775807."),
])
def test_integer_range(value: str, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        integer(query_request(f"limit={value}"), "limit")

    assert caught.value.message == message


@pytest.mark.parametrize("path, query", [
    ("/v1/t/stacks/a%00b", ""), ("/v1/t/stacks", "name=a%00"), ("/v1/t/stacks", "%00=1"),
    ("/v1/t/stacks", "tags=a&tags=%00"),
])
def test_a_nul_in_the_url_is_refused(path: str, query: str) -> None:
    req = falcon.testing.create_req(path=path, query_string=query)

    with pytest.raises(BadRequest, match=r"^The request's path or query has a NUL"):
        middleware.UrlText().process_request(req, falcon.Response())


def test_a_url_without_nul_passes() -> None:
    req: Any = falcon.testing.create_req(path="/v1/t/stacks/%E2%98%83",
                                         query_string="name=%E2%98%83&x=%FF")
    middleware.UrlText().process_request(req, falcon.Response())
