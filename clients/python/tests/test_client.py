"""The sync and async clients against a real `vigil serve`."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import List

import httpx
import pytest
from conftest import new_session_id

import vigil_client
from vigil_client import (
    AsyncVigil,
    AuthenticationError,
    NotFoundError,
    ValidationError,
    Vigil,
    VigilConnectionError,
)
from vigil_client.types import EventSignals, NewEvent

# Enough signals for the server to derive a device key (it needs six stable ones).
BROWSER_SIGNALS: EventSignals = {
    "webdriver": False,
    "userAgent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "webglVendor": "Mozilla",
    "webglRenderer": "Mozilla",
    "screenWidth": 1920,
    "screenHeight": 1080,
    "hardwareConcurrency": 8,
    "maxTouchPoints": 0,
    "timeZone": "Europe/Paris",
    "languages": ["en-US", "en"],
}


def visit(ip: str) -> NewEvent:
    return {"ipAddress": ip, "userAgent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"}


def test_imports_the_installed_package() -> None:
    # run-e2e.sh sets this: the wheel under test, not the source tree, must be what runs.
    if os.environ.get("VIGIL_EXPECT_INSTALLED") != "1":
        pytest.skip("only meaningful under run-e2e.sh")
    assert "site-packages" in (vigil_client.__file__ or "")
    assert vigil_client.__version__ == "1.0.0"


# --- sync ------------------------------------------------------------------------------------


def test_plan_usage_project_and_rate_limit(vigil: Vigil, project_id: str) -> None:
    plan = vigil.plan()
    assert plan["id"] and plan["maxRps"] > 0
    rate = vigil.rate_limit
    assert rate is not None and rate.raw_policy and rate.raw
    assert rate.policy == "burst" and rate.limit == plan["maxRps"]
    assert rate.policies["monthly"].limit == plan["maxRequests"]
    assert rate.remaining is not None and 0 <= rate.remaining <= plan["maxRps"]

    usage = vigil.usage()
    assert usage["maxRequests"] == plan["maxRequests"] and usage["requests"] >= 1

    project = vigil.project(project_id)
    assert project["id"] == project_id and project["apiKeyPublic"].startswith("pk_")
    assert project_id in [p["id"] for p in vigil.projects()]


def test_event_score_and_results_across_pages(base_url: str, api_key: str, project_id: str) -> None:
    pages: List[str] = []

    def count(response: httpx.Response) -> None:
        # Pages answered, not requests sent: a 429 retried under the demo plan is one page.
        url = response.request.url
        if response.status_code == 200 and url.path.startswith("/v1/results/") and not url.path.endswith("/general"):
            pages.append(str(url))

    http = httpx.Client(event_hooks={"response": [count]})
    with Vigil(api_key=api_key, base_url=base_url, max_retries=10, http_client=http) as vigil:
        session = new_session_id()
        ips = [f"203.0.113.{n}" for n in range(1, 8)]
        created = [vigil.create_event(project_id, session, visit(ip)) for ip in ips]
        assert [e["sessionId"] for e in created] == [session] * len(ips)
        assert all(0 <= e["scoreBot"] <= 1 for e in created)

        results = list(vigil.results(project_id, session, limit=2))
        assert len(results) == len(ips)  # 7 items through pages of 2: 4 pages, Link followed
        assert len(pages) == 4 and "cursor=" in pages[-1]
        assert sorted(r["ipAddress"] for r in results) == sorted(ips)
        stamps = [r["createdAt"] for r in results]
        assert stamps == sorted(stamps, reverse=True)  # newest first, across pages

        score = vigil.session_score(project_id, session)
        assert score["scoreBot"] == max(e["scoreBot"] for e in created)
        assert score["scoreProxyVpn"] == max(e["scoreProxyVpn"] for e in created)

        events = list(vigil.events(project_id, session, limit=3))
        assert sorted(e["id"] for e in events) == sorted(e["id"] for e in created)
        assert vigil.event(project_id, session, created[0]["id"]) == created[0]
    http.close()


def test_sessions_devices_stats_and_idempotency(vigil: Vigil, project_id: str) -> None:
    session = new_session_id()
    key = f"pytest-{uuid.uuid4()}"
    evidence: NewEvent = {
        "ipAddress": "185.220.101.1",
        "userAgent": "curl/8.5.0",
        "signals": BROWSER_SIGNALS,
    }
    first = vigil.create_event(project_id, session, evidence, idempotency_key=key)
    again = vigil.create_event(project_id, session, evidence, idempotency_key=key)
    assert again == first  # the retry got the first answer and wrote nothing
    assert [e["id"] for e in vigil.events(project_id, session)] == [first["id"]]
    assert first["scoreBot"] >= 0.5 and any(r["code"] == "tor_exit" for r in first["reasons"])

    flagged = list(vigil.sessions(project_id, limit=5, min_score_proxy_vpn=0.5))
    assert session in [s["sessionId"] for s in flagged]
    assert all(s["scoreProxyVpn"] >= 0.5 for s in flagged)

    device = first["device"]
    assert device is not None and device.startswith("dev_")
    assert [s["sessionId"] for s in vigil.device_sessions(project_id, device)] == [session]

    now = datetime.now(timezone.utc)
    buckets = vigil.stats(project_id, granularity="hour", from_=now - timedelta(hours=2), to=now)
    assert buckets and sum(b["visits"] for b in buckets) >= 1


def test_create_and_update_project(vigil: Vigil) -> None:
    key = f"pytest-{uuid.uuid4()}"
    project = vigil.create_project("SDK test", "sdk-test.example", idempotency_key=key)
    assert project["requireSessionToken"] is True and project["apiKeyPrivate"].startswith("sk_")
    assert vigil.create_project("SDK test", "sdk-test.example", idempotency_key=key) == project
    changed = vigil.update_project(project["id"], {"disabled": True, "name": "SDK test 2"})
    assert changed["disabled"] is True and changed["name"] == "SDK test 2"
    assert vigil.project(project["id"]) == changed


def test_typed_errors(vigil: Vigil, base_url: str) -> None:
    with Vigil(api_key="vgl_live_wrong", base_url=base_url) as wrong:
        with pytest.raises(AuthenticationError) as auth:
            wrong.plan()
    assert auth.value.status == 401 and auth.value.message == "Unauthorized"

    with pytest.raises(NotFoundError) as missing:
        vigil.project("prj_does_not_exist")
    assert missing.value.status == 404 and "not found" in missing.value.message.lower()

    with pytest.raises(ValidationError) as invalid:
        vigil.create_event("prj_demo", "s1", {"ipAddress": "1.2.3.4", "bogus": 1})  # type: ignore[typeddict-unknown-key]
    assert invalid.value.status == 400 and "bogus" in invalid.value.message

    with Vigil(api_key="vgl_live_x", base_url="http://127.0.0.1:9", max_retries=0) as nowhere:
        with pytest.raises(VigilConnectionError) as down:
            nowhere.plan()
    assert down.value.status is None


def test_verdict(vigil: Vigil, project_id: str) -> None:
    session = new_session_id()
    vigil.create_event(project_id, session, visit("198.51.100.9"))
    score = vigil.session_score(project_id, session)
    # The verdict makes one try and takes a 429 as "no verdict": let the demo plan's second
    # (10 requests) pass first, so the answer is the score, not the fallback.
    time.sleep(1.1)
    assert vigil.verdict(project_id, session) == score
    sentinel = {"scoreBot": 0.0, "scoreProxyVpn": 0.0}
    # A microsecond is too short for any answer, even over loopback.
    assert vigil.verdict(project_id, session, timeout=1e-6, fallback=sentinel) is sentinel
    assert vigil.verdict(project_id, "no-such-session", fallback=sentinel) is sentinel


# --- async -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_async_surface(base_url: str, api_key: str, project_id: str) -> None:
    async with AsyncVigil(api_key=api_key, base_url=base_url, max_retries=10) as vigil:
        plan = await vigil.plan()
        assert plan["maxRps"] > 0 and vigil.rate_limit is not None
        assert vigil.rate_limit.limit == plan["maxRps"]
        assert (await vigil.project(project_id))["id"] == project_id
        assert (await vigil.usage())["maxRequests"] == plan["maxRequests"]

        session = new_session_id("async")
        ips = [f"192.0.2.{n}" for n in range(1, 6)]
        created = [await vigil.create_event(project_id, session, visit(ip)) for ip in ips]
        results = [r async for r in vigil.results(project_id, session, limit=2)]
        assert len(results) == len(ips)  # 3 pages of at most 2
        assert sorted(r["ipAddress"] for r in results) == sorted(ips)
        events = [e async for e in vigil.events(project_id, session, limit=2)]
        assert sorted(e["id"] for e in events) == sorted(e["id"] for e in created)

        score = await vigil.session_score(project_id, session)
        assert score["scoreBot"] == max(e["scoreBot"] for e in created)
        # One try, a 429 is "no verdict": let the demo plan's second pass first.
        await asyncio.sleep(1.1)
        assert await vigil.verdict(project_id, session) == score
        assert await vigil.verdict(project_id, session, timeout=1e-6, fallback="late") == "late"

        sessions = [s["sessionId"] async for s in vigil.sessions(project_id, limit=100)]
        assert session in sessions
        assert len(await vigil.stats(project_id, granularity="day")) >= 1

        with pytest.raises(NotFoundError):
            await vigil.project("prj_does_not_exist")
        with pytest.raises(ValidationError):
            await vigil.create_event(project_id, session, {"ipAddress": "not an address"})

    async with AsyncVigil(api_key="vgl_live_wrong", base_url=base_url) as wrong:
        with pytest.raises(AuthenticationError):
            await wrong.plan()
