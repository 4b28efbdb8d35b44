"""The one boto3 client factory (resource service ``aws``) and the one error boundary.

Built once per process from ``[aws]``: credentials come from boto3's standard chain (the
environment, shared files, instance roles) or a named ``profile``, per tenant when
``tenant_profiles`` names one. Clients are cached per (profile, service): making one
reads botocore's service model (tens of milliseconds) and they are safe to share between
threads, whereas boto3 sessions are not, so sessions are only touched under a lock.

Every call goes through :class:`Client`, which turns botocore's errors into Kiln's
(``engine.errors.BackendFailed`` and its two subclasses) with the AWS error code in the
message. Retries are botocore's own (``standard`` or ``adaptive`` mode, which backs off on
throttling); what is still throttled after ``max_attempts`` is ``BackendThrottled``, which
a poll treats as "look again later".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oslo_config import cfg

from engine.errors import BackendFailed, BackendResourceGone, BackendThrottled

if TYPE_CHECKING:
    import boto3.session
    import botocore.exceptions

GROUP = "aws"

OPTS = [
    cfg.StrOpt("region", default="us-east-1", help="AWS region of every client."),
    cfg.URIOpt("endpoint_url", help="Send every call to this endpoint instead of AWS's own "
               "(an AWS-compatible cloud, or moto's server in tests)."),
    cfg.StrOpt("profile", help="Named profile of the shared credentials files; unset uses "
               "boto3's standard credential chain."),
    cfg.DictOpt("tenant_profiles", default={},
                help="Per-tenant profiles, as <tenant_id>:<profile> entries separated by "
                     "commas; a tenant not listed uses [aws] profile."),
    cfg.IntOpt("max_attempts", default=5, min=1,
               help="Attempts per call, the first included (botocore's retries)."),
    cfg.StrOpt("retry_mode", default="adaptive", choices=["standard", "adaptive"],
               help="botocore's retry mode; adaptive also rate-limits the client after "
                    "throttling errors."),
    cfg.FloatOpt("connect_timeout", default=5.0, min=0.1,
                 help="Seconds to wait for a connection to the endpoint."),
    cfg.FloatOpt("read_timeout", default=20.0, min=0.1,
                 help="Seconds to wait for a response; a handler's calls block a worker "
                      "thread this long at most (times max_attempts)."),
]

#: Codes AWS services use for "no such thing" (EC2's end in ``.NotFound``).
GONE_CODES = frozenset({
    "404", "NoSuchBucket", "NoSuchBucketPolicy", "NoSuchEntity", "NotFound",
    "ResourceNotFoundException", "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist", "InvalidGroup.NotFound",
})
THROTTLED_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
    "TooManyRequestsException", "SlowDown", "RequestThrottled",
    "ProvisionedThroughputExceededException", "RequestThrottledException",
})


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(GROUP, list(OPTS))]


class AwsClients:
    """The ``aws`` resource service: ``client(service, tenant_id)``."""

    def __init__(self, conf: Any) -> None:
        conf.register_opts(OPTS, group=GROUP)
        group = conf[GROUP]
        self.region: str = group.region
        self._endpoint_url: str | None = group.endpoint_url
        self._profile: str | None = group.profile
        self._tenant_profiles: dict[str, str] = dict(group.tenant_profiles)
        # What botocore's Config is made of; it is made with the first client, since
        # boto3 and botocore are imported only then (see client()).
        self._config_args: dict[str, Any] = dict(
            region_name=group.region,
            retries={"total_max_attempts": group.max_attempts, "mode": group.retry_mode},
            connect_timeout=group.connect_timeout, read_timeout=group.read_timeout,
            # Path-style works against every endpoint, loopback ones included.
            s3={"addressing_style": "path"} if group.endpoint_url else None)
        self._config: Any = None
        # botocore's and urllib3's DEBUG lines carry whole request bodies (template
        # values, hidden ones included) and signed headers: never log them, even when
        # [DEFAULT] debug turns everything else up.
        for name in ("botocore", "boto3", "urllib3"):
            logger = logging.getLogger(name)
            logger.setLevel(max(logger.getEffectiveLevel(), logging.INFO))
        self._lock = threading.Lock()
        self._sessions: dict[str | None, boto3.session.Session] = {}
        self._clients: dict[tuple[str | None, str], Client] = {}

    def client(self, service: str, tenant_id: str) -> Client:
        profile = self._tenant_profiles.get(tenant_id, self._profile)
        key = (profile, service)
        with self._lock:
            if key not in self._clients:
                # Imported here, not at the top: every process loads this service at
                # start (kiln-manage too, for any command that needs the resource types),
                # importing boto3 costs each of them about a tenth of a second, and most
                # never make a client.
                import boto3.session
                import botocore.config

                if self._config is None:
                    self._config = botocore.config.Config(**self._config_args)
                if profile not in self._sessions:
                    self._sessions[profile] = boto3.session.Session(profile_name=profile)
                raw = self._sessions[profile].client(
                    service, region_name=self.region, endpoint_url=self._endpoint_url,
                    config=self._config)
                self._clients[key] = Client(service, raw)
            return self._clients[key]


class Client:
    """A boto3 client whose calls raise Kiln's errors: ``client.create_queue(...)``."""

    def __init__(self, service: str, raw: Any) -> None:
        self.service = service
        self.raw = raw

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        import botocore.exceptions  # imported already: ``raw`` is a botocore client

        method = getattr(self.raw, operation)

        def call(**kwargs: Any) -> Any:
            try:
                return method(**kwargs)
            except botocore.exceptions.ClientError as exc:
                raise translate(self.service, operation, exc) from None
            except botocore.exceptions.BotoCoreError as exc:
                # No response at all: no credentials, endpoint unreachable, timeouts.
                raise BackendFailed(service=self.service, operation=_aws_name(operation),
                                    code=type(exc).__name__, reason=str(exc)) from None

        return call


def translate(service: str, operation: str, exc: botocore.exceptions.ClientError
              ) -> BackendFailed:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    reason = str(error.get("Message") or exc)
    operation = getattr(exc, "operation_name", None) or _aws_name(operation)
    cls: type[BackendFailed] = BackendFailed
    if code in GONE_CODES or code.endswith(".NotFound"):
        cls = BackendResourceGone
    elif code in THROTTLED_CODES:
        cls = BackendThrottled
    return cls(service=service, operation=operation, code=code, reason=reason)


def _aws_name(operation: str) -> str:
    """boto3's ``create_vpc`` as AWS names it, ``CreateVpc``."""
    return "".join(part.capitalize() for part in operation.split("_"))
