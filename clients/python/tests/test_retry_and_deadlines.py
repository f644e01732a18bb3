"""429 retries, rate-limit headers and the verdict deadline, against a local fake API."""

from __future__ import annotations

import time
from typing import Callable

import pytest
from conftest import PLAN, FakeApi

from vigil_client import AsyncVigil, RateLimitError, Vigil

LIMITED = (
    429,
    {
        "Retry-After": "1",
        "RateLimit-Policy": '"burst";q=10;w=1, "monthly";q=100000;w=2592000',
        "RateLimit": '"burst";r=0;t=1, "monthly";r=99000;t=3600',
    },
    {"message": "Rate limit exceeded"},
    0.0,
)
OK = (
    200,
    {
        "RateLimit-Policy": '"burst";q=10;w=1, "monthly";q=100000;w=2592000',
        "RateLimit": '"burst";r=9;t=1, "monthly";r=98999;t=3599',
    },
    {"data": PLAN},
    0.0,
)


def test_429_is_retried_after_retry_after(fake_api: Callable[..., FakeApi]) -> None:
    api = fake_api([LIMITED, OK])
    with Vigil(api_key="vgl_live_x", base_url=api.url) as vigil:
        started = time.monotonic()
        assert vigil.plan() == PLAN
        assert time.monotonic() - started >= 1.0  # waited the Retry-After
    assert api.hits == ["/v1/plan", "/v1/plan"]
    rate = vigil.rate_limit
    assert rate is not None and (rate.limit, rate.remaining, rate.reset) == (10, 9, 1)
    assert rate.policies["monthly"].remaining == 98999 and rate.policies["monthly"].window == 2592000
    assert rate.raw == '"burst";r=9;t=1, "monthly";r=98999;t=3599'


def test_429_past_the_retries_raises(fake_api: Callable[..., FakeApi]) -> None:
    api = fake_api([LIMITED])
    with Vigil(api_key="vgl_live_x", base_url=api.url, max_retries=1) as vigil:
        with pytest.raises(RateLimitError) as limited:
            vigil.plan()
    assert len(api.hits) == 2  # the first try and one retry
    assert limited.value.status == 429 and limited.value.retry_after == 1.0
    assert limited.value.message == "Rate limit exceeded"
    assert vigil.rate_limit is not None and vigil.rate_limit.remaining == 0


@pytest.mark.asyncio
async def test_async_429_is_retried(fake_api: Callable[..., FakeApi]) -> None:
    api = fake_api([LIMITED, OK])
    async with AsyncVigil(api_key="vgl_live_x", base_url=api.url) as vigil:
        started = time.monotonic()
        assert await vigil.plan() == PLAN
        assert time.monotonic() - started >= 1.0
        assert vigil.rate_limit is not None and vigil.rate_limit.remaining == 9
    assert len(api.hits) == 2
    api2 = fake_api([LIMITED])
    async with AsyncVigil(api_key="vgl_live_x", base_url=api2.url, max_retries=0) as vigil:
        with pytest.raises(RateLimitError):
            await vigil.plan()
    assert len(api2.hits) == 1


SLOW = (200, {}, {"data": {"scoreBot": 0.1, "scoreProxyVpn": 0.1}}, 2.0)


def test_verdict_deadline_gives_the_fallback(fake_api: Callable[..., FakeApi]) -> None:
    api = fake_api([SLOW])
    with Vigil(api_key="vgl_live_x", base_url=api.url) as vigil:
        started = time.monotonic()
        assert vigil.verdict("prj_1", "s1", timeout=0.2, fallback="open") == "open"
        assert time.monotonic() - started < 1.5
        assert vigil.verdict("prj_1", "s1", timeout=0.2) is None


def test_verdict_does_not_wait_out_a_429(fake_api: Callable[..., FakeApi]) -> None:
    api = fake_api([LIMITED, OK])
    with Vigil(api_key="vgl_live_x", base_url=api.url) as vigil:
        assert vigil.verdict("prj_1", "s1", fallback="busy") == "busy"
    assert len(api.hits) == 1


@pytest.mark.asyncio
async def test_async_verdict_deadline(fake_api: Callable[..., FakeApi]) -> None:
    api = fake_api([SLOW])
    async with AsyncVigil(api_key="vgl_live_x", base_url=api.url) as vigil:
        started = time.monotonic()
        assert await vigil.verdict("prj_1", "s1", timeout=0.2, fallback="open") == "open"
        assert time.monotonic() - started < 1.0
