"""The FastAPI dependency and the Django middleware with Vigil stopped, slow or failing.

What a page gets (fail open by default: served, ``available`` false; fail closed: a 503 with a
message) and how long it waits: at most the helper's timeout (2 s by default) for any number of
concurrent requests, which share one read of the project's keys (the slow server counts them).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import httpx
import pytest
from conftest import FakeApi, django_configured

from vigil_client import AsyncVigil, Vigil, VigilConnectionError, VigilTimeoutError

SLACK = 1.5
PROJECT = {
    "id": "prj_fake",
    "name": "Fake",
    "domain": "shop.example",
    "apiKeyPublic": "pk_fake",
    "apiKeyPrivate": "sk_fake",
    "createdAt": "2026-01-01T00:00:00.000Z",
    "requireSessionToken": False,
    "sealedResults": False,
}
Answer = Tuple[int, Dict[str, str], object, float]
SLOW: Answer = (200, {}, {"data": PROJECT}, 10.0)
DOWN: Answer = (503, {}, {"message": "down"}, 0.0)
UP: Answer = (200, {}, {"data": PROJECT}, 0.0)

FakeApiStarter = Callable[..., FakeApi]


@pytest.fixture()
def stopped() -> str:
    """A port nothing listens on: connections are refused, as with Vigil stopped."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def expected_token(secret: str, session_id: str, token: str) -> str:
    import hashlib
    import hmac

    expiry = token.split(".")[0]
    mac = hmac.new(secret.encode(), f"vigil/{session_id}:{expiry}".encode(), hashlib.sha256)
    return f"{expiry}.{mac.hexdigest()}"


# --- FastAPI -----------------------------------------------------------------------------------


Client = Union[Vigil, AsyncVigil]


@pytest.fixture(params=["sync", "async"])
def client_at(request: pytest.FixtureRequest) -> Iterator[Callable[[str], Client]]:
    made: List[Client] = []

    def make(url: str) -> Client:
        client: Client = (
            Vigil(api_key="vgl_live_x", base_url=url)
            if request.param == "sync"
            else AsyncVigil(api_key="vgl_live_x", base_url=url)
        )
        made.append(client)
        return client

    yield make
    for client in made:
        if isinstance(client, Vigil):
            client.close()


def fastapi_app(client: Client, **options: Any) -> Any:
    from fastapi import Depends, FastAPI

    from vigil_client.fastapi import VigilSession, session

    app = FastAPI()
    dependency = session(client, project="prj_fake", **options)

    @app.get("/")
    async def page(s: VigilSession = Depends(dependency)) -> Dict[str, Any]:
        return {
            "available": s.available,
            "publicKey": s.public_key,
            "sessionId": s.session_id,
            "sessionToken": s.session_token,
            "error": type(s.error).__name__ if s.error else None,
        }

    return app


async def views(app: Any, count: int) -> Tuple[List[httpx.Response], float]:
    """``count`` concurrent page views through the ASGI app, and the time they took in all."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://shop.test") as browser:
        started = time.monotonic()
        answers = await asyncio.gather(*(browser.get("/") for _ in range(count)))
        return list(answers), time.monotonic() - started


@pytest.mark.asyncio
async def test_fastapi_vigil_stopped_fails_open_at_once(
    client_at: Callable[[str], Client], stopped: str
) -> None:
    answers, elapsed = await views(fastapi_app(client_at(stopped)), 5)
    for answer in answers:
        assert answer.status_code == 200
        body = answer.json()
        assert (body["available"], body["publicKey"], body["sessionToken"], body["error"]) == (
            False, None, None, "VigilConnectionError"
        )  # fmt: skip
        assert answer.cookies["vigil_session"] == body["sessionId"]  # the session all the same
    assert elapsed < SLACK, elapsed


@pytest.mark.asyncio
async def test_fastapi_vigil_stopped_fails_closed_with_503(
    client_at: Callable[[str], Client], stopped: str
) -> None:
    answers, elapsed = await views(fastapi_app(client_at(stopped), on_error="closed"), 3)
    for answer in answers:
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.headers["content-type"].startswith("application/json")
        message = answer.json()["detail"]
        assert "unavailable" in message and "127.0.0.1" not in message
    assert elapsed < SLACK, elapsed


@pytest.mark.asyncio
async def test_fastapi_closed_can_answer_message_like_the_api(
    client_at: Callable[[str], Client], stopped: str
) -> None:
    from vigil_client.fastapi import VigilUnavailable, unavailable_as_message

    app = fastapi_app(client_at(stopped), on_error="closed")
    app.add_exception_handler(VigilUnavailable, unavailable_as_message)
    answers, _ = await views(app, 1)
    assert answers[0].status_code == 503 and answers[0].headers["retry-after"] == "1"
    assert list(answers[0].json()) == ["message"] and "unavailable" in answers[0].json()["message"]


@pytest.mark.asyncio
async def test_fastapi_slow_vigil_20_requests_wait_one_timeout_and_share_one_read(
    client_at: Callable[[str], Client], fake_api: FakeApiStarter
) -> None:
    slow = fake_api([SLOW])
    answers, elapsed = await views(fastapi_app(client_at(slow.url)), 20)  # default timeout 2 s
    for answer in answers:
        assert answer.status_code == 200
        assert answer.json()["available"] is False
        assert answer.json()["error"] == "VigilTimeoutError"
    assert 1.9 <= elapsed < 2.0 + SLACK, f"20 views took {elapsed:.2f} s, not about 2"
    assert len(slow.hits) == 1, "one read of the keys for all (single-flight)"


@pytest.mark.asyncio
async def test_fastapi_slow_vigil_fails_closed_within_the_timeout(
    client_at: Callable[[str], Client], fake_api: FakeApiStarter
) -> None:
    slow = fake_api([SLOW])
    app = fastapi_app(client_at(slow.url), on_error="closed", timeout=0.5)
    answers, elapsed = await views(app, 10)
    assert [a.status_code for a in answers] == [503] * 10
    assert 0.45 <= elapsed < 0.5 + SLACK, elapsed
    assert len(slow.hits) == 1


@pytest.mark.asyncio
async def test_fastapi_failure_is_kept_for_the_retry_interval_only(
    client_at: Callable[[str], Client], fake_api: FakeApiStarter
) -> None:
    flaky = fake_api([DOWN, UP])  # the first read fails, later ones succeed
    app = fastapi_app(client_at(flaky.url), retry_interval=0.4)
    first, _ = await views(app, 1)
    assert first[0].json()["available"] is False and first[0].json()["error"] == "VigilError"
    during, elapsed = await views(app, 5)
    assert all(a.json()["available"] is False for a in during) and elapsed < 0.4
    assert len(flaky.hits) == 1, "no read during the retry interval"

    await asyncio.sleep(0.45)
    back, _ = await views(app, 3)
    for answer in back:
        body = answer.json()
        assert body["available"] is True and body["publicKey"] == "pk_fake"
        assert body["sessionToken"] == expected_token("sk_fake", body["sessionId"], body["sessionToken"])
    assert len(flaky.hits) == 2
    await views(app, 3)
    assert len(flaky.hits) == 2, "the keys are kept once read"


@pytest.mark.asyncio
async def test_fastapi_on_error_callable_decides(
    client_at: Callable[[str], Client], stopped: str
) -> None:
    from fastapi import HTTPException
    from starlette.requests import Request

    seen: List[Exception] = []

    async def decide(request: Request, error: Exception) -> None:
        seen.append(error)
        if request.query_params.get("strict"):
            raise HTTPException(status_code=429, detail="later")

    app = fastapi_app(client_at(stopped), on_error=decide)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://shop.test") as browser:
        assert (await browser.get("/")).json()["available"] is False
        assert (await browser.get("/?strict=1")).status_code == 429
    assert len(seen) == 2 and all(isinstance(e, VigilConnectionError) for e in seen)


def test_fastapi_options_are_checked_when_the_dependency_is_made() -> None:
    from vigil_client.fastapi import session

    dead = AsyncVigil(api_key="vgl_live_x", base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="on_error"):
        session(dead, project="p", on_error="maybe")
    with pytest.raises(ValueError, match="timeout"):
        session(dead, project="p", timeout=0)
    with pytest.raises(ValueError, match="retry_interval"):
        session(dead, project="p", retry_interval=-1)
    with pytest.raises(ValueError, match="ttl_seconds"):
        session(dead, project="p", ttl_seconds=86401)
    with pytest.raises(ValueError, match="project"):
        session(dead, project="")


# --- Django ------------------------------------------------------------------------------------


def django_middleware(url: str, **settings: Any) -> Any:
    """A VigilMiddleware for ``url`` whose view answers JSON of ``request.vigil``."""
    django_configured()
    from django.http import HttpRequest, HttpResponse
    from django.test import override_settings

    from vigil_client.django import VigilMiddleware

    def view(request: HttpRequest) -> HttpResponse:
        s = getattr(request, "vigil")
        body = {
            "available": s.available,
            "publicKey": s.public_key,
            "sessionId": s.session_id,
            "sessionToken": s.session_token,
            "error": type(s.error).__name__ if s.error else None,
        }
        return HttpResponse(json.dumps(body), content_type="application/json")

    values = {"VIGIL_API_KEY": "vgl_live_x", "VIGIL_PROJECT": "prj_fake", "VIGIL_BASE_URL": url}
    with override_settings(**{**values, **settings}):
        return VigilMiddleware(view)


def django_views(middleware: Any, count: int, path: str = "/") -> Tuple[List[Any], float]:
    """``count`` concurrent requests, each on a thread of its own as a threaded server runs them."""
    from django.test import RequestFactory

    factory = RequestFactory()
    with ThreadPoolExecutor(max_workers=count) as pool:
        started = time.monotonic()
        answers = list(pool.map(lambda _: middleware(factory.get(path)), range(count)))
        return answers, time.monotonic() - started


def test_django_vigil_stopped_fails_open_at_once(stopped: str) -> None:
    answers, elapsed = django_views(django_middleware(stopped), 5)
    for answer in answers:
        assert answer.status_code == 200
        body = json.loads(answer.content)
        assert (body["available"], body["publicKey"], body["sessionToken"], body["error"]) == (
            False, None, None, "VigilConnectionError"
        )  # fmt: skip
        assert answer.cookies["vigil_session"].value == body["sessionId"]
    assert elapsed < SLACK, elapsed


def test_django_vigil_stopped_fails_closed_with_503(stopped: str) -> None:
    answers, elapsed = django_views(django_middleware(stopped, VIGIL_ON_ERROR="closed"), 3)
    for answer in answers:
        assert answer.status_code == 503
        assert answer["Content-Type"] == "application/json"
        assert answer["Retry-After"] == "1"
        body = json.loads(answer.content)
        assert list(body) == ["message"] and "unavailable" in body["message"]
        assert "127.0.0.1" not in body["message"]
    assert elapsed < SLACK, elapsed


def test_django_slow_vigil_20_requests_wait_one_timeout_and_share_one_read(
    fake_api: FakeApiStarter,
) -> None:
    slow = fake_api([SLOW])
    # Before: one lock around a 10 s fetch, so the n-th request waited about n x 10 s.
    middleware = django_middleware(slow.url)  # default timeout 2 s
    answers, elapsed = django_views(middleware, 20)
    for answer in answers:
        assert answer.status_code == 200
        body = json.loads(answer.content)
        assert body["available"] is False and body["error"] == "VigilTimeoutError"
    assert 1.9 <= elapsed < 2.0 + SLACK, f"20 requests took {elapsed:.2f} s, not about 2"
    assert len(slow.hits) == 1, "one read of the keys for all (single-flight)"
    # Just after, within the retry interval: at once, and no second read.
    _, elapsed = django_views(middleware, 3)
    assert elapsed < 0.5, elapsed
    assert len(slow.hits) == 1


def test_django_slow_vigil_fails_closed_within_the_timeout(fake_api: FakeApiStarter) -> None:
    slow = fake_api([SLOW])
    middleware = django_middleware(slow.url, VIGIL_ON_ERROR="closed", VIGIL_TIMEOUT=0.5)
    answers, elapsed = django_views(middleware, 10)
    assert [a.status_code for a in answers] == [503] * 10
    assert 0.45 <= elapsed < 0.5 + SLACK, elapsed
    assert len(slow.hits) == 1


def test_django_failure_is_kept_for_the_retry_interval_only(fake_api: FakeApiStarter) -> None:
    flaky = fake_api([DOWN, UP])
    middleware = django_middleware(flaky.url, VIGIL_RETRY_INTERVAL=0.4)
    first, _ = django_views(middleware, 1)
    assert json.loads(first[0].content)["error"] == "VigilError"
    during, elapsed = django_views(middleware, 5)
    assert all(json.loads(a.content)["available"] is False for a in during) and elapsed < 0.4
    assert len(flaky.hits) == 1, "no read during the retry interval"

    time.sleep(0.45)
    back, _ = django_views(middleware, 3)
    for answer in back:
        body = json.loads(answer.content)
        assert body["available"] is True and body["publicKey"] == "pk_fake"
        assert body["sessionToken"] == expected_token("sk_fake", body["sessionId"], body["sessionToken"])
    assert len(flaky.hits) == 2
    django_views(middleware, 3)
    assert len(flaky.hits) == 2, "the keys are kept once read"


def test_django_on_error_callable_decides(stopped: str) -> None:
    from django.http import HttpRequest, HttpResponse

    seen: List[Exception] = []

    def decide(request: HttpRequest, error: Exception) -> Optional[HttpResponse]:
        seen.append(error)
        return HttpResponse("later", status=429) if request.GET.get("strict") else None

    middleware = django_middleware(stopped, VIGIL_ON_ERROR=decide)
    assert json.loads(django_views(middleware, 1)[0][0].content)["available"] is False
    refused = django_views(middleware, 1, "/?strict=1")[0][0]
    assert refused.status_code == 429 and refused.content == b"later"
    assert len(seen) == 2 and all(isinstance(e, VigilConnectionError) for e in seen)


def test_django_given_keys_make_no_call(stopped: str) -> None:
    middleware = django_middleware(
        stopped,
        VIGIL_PUBLIC_KEY="pk_given",
        VIGIL_PROJECT_SECRET="sk_given",
        VIGIL_ON_ERROR="closed",
    )
    body = json.loads(django_views(middleware, 1)[0][0].content)
    assert body["available"] is True and body["publicKey"] == "pk_given"
    assert body["sessionToken"] == expected_token("sk_given", body["sessionId"], body["sessionToken"])


def test_django_bad_settings_are_refused_at_start_up(stopped: str) -> None:
    from django.core.exceptions import ImproperlyConfigured

    for bad in (
        {"VIGIL_ON_ERROR": "maybe"},
        {"VIGIL_TIMEOUT": 0},
        {"VIGIL_TIMEOUT": "soon"},
        {"VIGIL_RETRY_INTERVAL": -1},
        {"VIGIL_TOKEN_TTL": 0},
        {"VIGIL_BASE_URL": "ftp://vigil.example"},
        {"VIGIL_API_KEY": ""},
    ):
        with pytest.raises(ImproperlyConfigured):
            django_middleware(stopped, **bad)


def test_timeouts_are_vigil_timeout_errors(fake_api: FakeApiStarter) -> None:
    slow = fake_api([SLOW])
    body = json.loads(django_views(django_middleware(slow.url, VIGIL_TIMEOUT=0.3), 1)[0][0].content)
    assert body["error"] == VigilTimeoutError.__name__


# --- open_project_sealed on a request path -------------------------------------------------------


@pytest.mark.asyncio
async def test_open_project_sealed_waits_seconds_for_keys_it_does_not_hold(
    fake_api: FakeApiStarter,
) -> None:
    slow = fake_api([SLOW])
    expect = {"sessionId": "sess_a"}
    with Vigil(api_key="vgl_live_x", base_url=slow.url) as vigil:
        started = time.monotonic()
        with pytest.raises(VigilTimeoutError):
            vigil.open_project_sealed("prj_fake", "a.b.c.d.e", expect, timeout=0.5)
        assert time.monotonic() - started < 0.5 + SLACK
    async with AsyncVigil(api_key="vgl_live_x", base_url=slow.url) as async_vigil:
        started = time.monotonic()
        with pytest.raises(VigilTimeoutError):
            await async_vigil.open_project_sealed("prj_fake", "a.b.c.d.e", expect)  # default 2 s
        assert 1.9 <= time.monotonic() - started < 2.0 + SLACK
