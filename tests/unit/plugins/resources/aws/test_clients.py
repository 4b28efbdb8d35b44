"""The client factory and the one error boundary: options, per-tenant profiles, the
cache, and botocore's errors as Kiln's, with AWS's code and operation name."""

from __future__ import annotations

import logging

import botocore.exceptions
import pytest

from engine.errors import BackendFailed, BackendResourceGone, BackendThrottled
from plugins.resources.aws.clients import translate
from tests.functional.aws.endpoint import MotoServer
from tests.unit.plugins.resources.aws.conftest import aws_clients


def _error(code: str, message: str = "it said no") -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message}},
                                           "DescribeVpcs")


@pytest.mark.parametrize(("code", "cls"), [
    ("InvalidVpcID.NotFound", BackendResourceGone),
    ("AWS.SimpleQueueService.NonExistentQueue", BackendResourceGone),
    ("NoSuchBucket", BackendResourceGone),
    ("NoSuchEntity", BackendResourceGone),
    ("ResourceNotFoundException", BackendResourceGone),
    ("RequestLimitExceeded", BackendThrottled),
    ("ThrottlingException", BackendThrottled),
    ("SlowDown", BackendThrottled),
    ("UnauthorizedOperation", BackendFailed),
])
def test_errors_map_by_code(code: str, cls: type[BackendFailed]) -> None:
    error = translate("ec2", "describe_vpcs", _error(code))
    assert type(error) is cls
    assert error.message == f"ec2 DescribeVpcs failed: {code}: it said no"
    assert error.code == code


def test_clients_are_cached_per_profile_and_service(moto: MotoServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    clients = aws_clients(moto.url, region="eu-west-1", max_attempts=2,
                          read_timeout=3.5, connect_timeout=1.5)
    sqs = clients.client("sqs", "tenant-a")
    assert clients.client("sqs", "tenant-b") is sqs
    assert clients.client("sns", "tenant-a") is not sqs
    config = sqs.raw.meta.config
    assert (config.region_name, config.read_timeout, config.connect_timeout) == (
        "eu-west-1", 3.5, 1.5)
    assert config.retries == {"total_max_attempts": 2, "mode": "adaptive"}
    assert sqs.raw.meta.endpoint_url == moto.url
    created = sqs.create_queue(QueueName="cached")
    assert created["QueueUrl"].endswith("/cached")
    with pytest.raises(BackendResourceGone, match=r"^sqs GetQueueAttributes failed: "):
        sqs.get_queue_attributes(QueueUrl=f"{moto.url}/123456789012/nothing")


def test_a_tenant_with_a_profile_of_its_own_gets_its_own_client(
        moto: MotoServer, tmp_path: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    credentials = tmp_path / "credentials"  # type: ignore[operator]
    credentials.write_text("[other]\naws_access_key_id = other\n"
                           "aws_secret_access_key = other\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    clients = aws_clients(moto.url, tenant_profiles={"special": "other"})
    special = clients.client("sqs", "special")
    assert special is not clients.client("sqs", "plain")
    assert special.raw._request_signer._credentials.access_key == "other"


def test_request_bodies_never_reach_the_log_even_under_debug(
        moto: MotoServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for name in ("botocore", "boto3", "urllib3"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.DEBUG)
    clients = aws_clients(moto.url)
    with caplog.at_level(logging.DEBUG):
        clients.client("sqs", "t").create_queue(QueueName="logged",
                                                tags={"api-key": "hunter2-in-a-tag"})
    assert "hunter2-in-a-tag" not in caplog.text
    assert "testing" not in caplog.text


def test_no_endpoint_at_all_is_a_backend_failure_not_a_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    clients = aws_clients("http://127.0.0.1:9", max_attempts=1, connect_timeout=0.5)
    with pytest.raises(BackendFailed, match=r"^sqs ListQueues failed: "
                                            r"EndpointConnectionError: "):
        clients.client("sqs", "t").list_queues()
