"""Shared fixtures: the server under test (from the environment) and small local HTTP servers.

The suite runs against a real `vigil serve` (run-e2e.sh starts one) and imports the installed
`vigil_client`, never the source tree.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlsplit

import httpx
import pytest

from vigil_client import Vigil


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} must be set (run-e2e.sh sets it)")
    return value


@pytest.fixture(scope="session")
def base_url() -> str:
    return _env("VIGIL_BASE_URL").rstrip("/")


@pytest.fixture(scope="session")
def api_key() -> str:
    return _env("VIGIL_API_KEY")


@pytest.fixture(scope="session")
def project_id() -> str:
    return _env("VIGIL_PROJECT")


@pytest.fixture(scope="session")
def openapi_path() -> str:
    return _env("VIGIL_OPENAPI")


@pytest.fixture()
def vigil(base_url: str, api_key: str) -> Iterator[Vigil]:
    # The demo plan allows 10 requests a second; a generous retry budget keeps a fast suite
    # from failing on its own burst (the 429 path itself is tested against a fake server).
    with Vigil(api_key=api_key, base_url=base_url, max_retries=10) as client:
        yield client


@pytest.fixture(scope="session")
def project_keys(base_url: str, api_key: str, project_id: str) -> Tuple[str, str]:
    """(apiKeyPublic, apiKeyPrivate) of the project under test."""
    with Vigil(api_key=api_key, base_url=base_url, max_retries=10) as client:
        project = client.project(project_id)
    return project["apiKeyPublic"], project["apiKeyPrivate"]


def django_configured() -> None:
    """Django's settings, once per process; each test sets its VIGIL_* with override_settings."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(SECRET_KEY="test-only", ALLOWED_HOSTS=["testserver"])
        django.setup()


def new_session_id(prefix: str = "pytest") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@pytest.fixture()
def collect(base_url: str) -> Callable[[str, str, Optional[str]], httpx.Response]:
    """Posts a visit to /v1/collect as the browser agent would, from a loopback page origin."""
    port = urlsplit(base_url).port

    def post(public_key: str, session_id: str, token: Optional[str]) -> httpx.Response:
        body = {
            "publicKey": public_key,
            "sessionId": session_id,
            "sessionToken": token,
            "signals": {"webdriver": False},
        }
        return httpx.post(
            f"{base_url}/v1/collect",
            json=body,
            headers={"Origin": f"http://localhost:{port}"},
            timeout=10,
        )

    return post


# --- local HTTP servers ----------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: Dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 that queues every POST it gets."""

    url: str
    deliveries: "queue.Queue[Received]" = field(default_factory=queue.Queue)

    def next(self, timeout: float = 5.0) -> Received:
        try:
            return self.deliveries.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no delivery reached {self.url} within {timeout} s")


def _serve(handler: type) -> Tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    got: "queue.Queue[Received]" = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            got.put(Received(self.path, dict(self.headers.items()), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server, origin = _serve(Handler)
    yield Receiver(url=f"{origin}/hook", deliveries=got)
    server.shutdown()
    server.server_close()


@dataclass
class FakeApi:
    """A stand-in API: each GET takes the next scripted answer; `hits` counts requests."""

    url: str
    hits: List[str]


PLAN = {
    "id": "plan_trial",
    "name": "Trial",
    "description": "14-day trial",
    "maxRps": 10,
    "maxProjects": 3,
    "maxRequests": 100000,
    "expiresAt": None,
    "subscribedAt": "2026-11-21T00:00:00.000Z",
    "status": "trialing",
    "unsubscribedAt": None,
}


@pytest.fixture()
def fake_api() -> Iterator[Callable[..., FakeApi]]:
    """Starts fake APIs answering from a script of (status, headers, body, delay) tuples."""
    servers: List[ThreadingHTTPServer] = []

    def start(script: List[Tuple[int, Dict[str, str], object, float]]) -> FakeApi:
        answers = list(script)
        hits: List[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                status, headers, body, delay = answers.pop(0) if len(answers) > 1 else answers[0]
                if delay:
                    threading.Event().wait(delay)
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the verdict deadline): that is the point

            def log_message(self, *args: object) -> None:
                pass

        server, origin = _serve(Handler)
        servers.append(server)
        return FakeApi(url=origin, hits=hits)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
