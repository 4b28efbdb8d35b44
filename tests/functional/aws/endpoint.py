"""moto's standalone server on a free loopback port, and a proxy in front of it that
throttles or delays chosen calls: the AWS-compatible endpoint the AWS types are tested
against (never boto3 patched in-process)."""

from __future__ import annotations

import http.client
import http.server
import pathlib
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import boto3

from tests.functional.servers import free_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}
MOTO = pathlib.Path(sys.executable).parent / "moto_server"


class MotoServer:
    def __init__(self, log_path: pathlib.Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")  # noqa: SIM115 -- closed in stop()
        self.popen = subprocess.Popen([str(MOTO), "-H", "127.0.0.1", "-p", str(self.port)],
                                      stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1)
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"moto_server did not start on {self.url}")

    def client(self, service: str, url: str | None = None) -> Any:
        return boto3.client(service, endpoint_url=url or self.url, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def stop(self) -> None:
        self.popen.terminate()
        self.popen.wait(10)
        self._log.close()


#: Decides, per request (``"<method> <path> <X-Amz-Target> <body>"``), what the proxy
#: does: None forwards it; a number of seconds forwards it and holds the answer that long;
#: "throttle" answers with EC2's throttling error without forwarding.
Rule = Callable[[str], "float | str | None"]

THROTTLED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
             b'<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message>'
             b'</Error></Errors><RequestID>kiln-test</RequestID></Response>')


class Proxy:
    """A loopback HTTP proxy to ``upstream`` applying :data:`Rule` to every request."""

    def __init__(self, upstream_port: int) -> None:
        self.rule: Rule = lambda _call: None
        self.throttled: list[str] = []
        self.delayed: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                call = " ".join((self.command, self.path,
                                 self.headers.get("X-Amz-Target") or "",
                                 body.decode(errors="replace")))
                verdict = proxy.rule(call)
                if verdict == "throttle":
                    proxy.throttled.append(call)
                    self.send_response(503)
                    self.send_header("Content-Type", "text/xml")
                    self.send_header("Content-Length", str(len(THROTTLED)))
                    self.end_headers()
                    self.wfile.write(THROTTLED)
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"127.0.0.1:{upstream_port}"
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                payload = answer.read()
                if isinstance(verdict, (int, float)):
                    proxy.delayed.append(call)
                    time.sleep(verdict)
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection",
                                           "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                upstream.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
