"""Session tokens accepted by /v1/collect, and real webhook deliveries verified."""

from __future__ import annotations

import time
from typing import Callable, Optional, Tuple

import httpx
import pytest
from conftest import Receiver, new_session_id

from vigil_client import (
    AsyncVigil,
    ConflictError,
    NotFoundError,
    Vigil,
    WebhookVerificationError,
)

Collect = Callable[[str, str, Optional[str]], httpx.Response]


def test_session_token_accepted_and_forgery_refused(
    collect: Collect, project_keys: Tuple[str, str]
) -> None:
    public_key, secret = project_keys
    session = new_session_id("token")
    token = Vigil.session_token(secret, session, ttl_seconds=600)
    expiry, signature = token.split(".")
    assert abs(int(expiry) - (time.time() + 600)) < 5 and len(signature) == 64

    accepted = collect(public_key, session, token)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["data"]["id"].startswith("evt_")

    forged = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    assert collect(public_key, session, f"{expiry}.{forged}").status_code == 401
    # A token is for its own session only, and the project requires one.
    assert collect(public_key, new_session_id("other"), token).status_code == 401
    assert collect(public_key, session, None).status_code == 401
    # AsyncVigil exposes the same static helper.
    assert collect(public_key, session, AsyncVigil.session_token(secret, session)).status_code == 202


def test_session_token_bounds() -> None:
    with pytest.raises(ValueError):
        Vigil.session_token("sk_x", "s1", ttl_seconds=86401)
    with pytest.raises(ValueError):
        Vigil.session_token("sk_x", "not/a session")


def _wait_for_status(vigil: Vigil, project_id: str, webhook_id: str, delivery_id: str) -> str:
    deadline = time.monotonic() + 5
    while True:
        log = {d["id"]: d for d in vigil.deliveries(project_id, webhook_id)}
        status = log[delivery_id]["status"] if delivery_id in log else "missing"
        if status != "pending" and status != "missing" or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def test_real_delivery_verifies(
    vigil: Vigil, project_id: str, receiver: Receiver, project_keys: Tuple[str, str]
) -> None:
    webhook_id = vigil.create_webhook(project_id, "bot_detect", receiver.url)
    try:
        assert webhook_id in [w["id"] for w in vigil.webhooks(project_id)]
        with pytest.raises(ConflictError):
            vigil.create_webhook(project_id, "bot_detect", receiver.url)
        secret = vigil.webhook_secret(project_id, webhook_id)
        assert secret is not None and secret.startswith("whsec_")

        delivery_id = vigil.test_webhook(project_id, webhook_id)
        got = receiver.next()
        assert got.path == "/hook"
        event = Vigil.verify_webhook(got.body, got.headers, secret)
        assert event["type"] == "webhook.test"
        assert event["data"] == {"projectId": project_id, "webhookId": webhook_id}
        # str payloads and headers in any case verify too.
        upper = {k.upper(): v for k, v in got.headers.items()}
        assert Vigil.verify_webhook(got.body.decode(), upper, secret) == event
        # The legacy signature, under the project's apiKeyPrivate as raw UTF-8 bytes.
        assert Vigil.verify_webhook(got.body, got.headers, project_keys[1]) == event

        tampered = got.body.replace(webhook_id.encode(), b"wh_other")
        assert tampered != got.body
        with pytest.raises(WebhookVerificationError):
            Vigil.verify_webhook(tampered, got.headers, secret)
        with pytest.raises(WebhookVerificationError):
            Vigil.verify_webhook(got.body, got.headers, "whsec_" + "A" * 32)  # another secret
        stale = {**got.headers, "webhook-timestamp": str(int(time.time()) - 600)}
        with pytest.raises(WebhookVerificationError):
            Vigil.verify_webhook(got.body, stale, secret)
        with pytest.raises(WebhookVerificationError):
            Vigil.verify_webhook(got.body, {**got.headers, "webhook-signature": "v1,???"}, secret)

        assert _wait_for_status(vigil, project_id, webhook_id, delivery_id) == "delivered"
        assert vigil.redeliver(project_id, delivery_id) == delivery_id
        again = receiver.next()
        assert again.headers["webhook-id"] == got.headers["webhook-id"]
        assert again.body == got.body
        assert Vigil.verify_webhook(again.body, again.headers, secret) == event
    finally:
        vigil.delete_webhook(project_id, webhook_id)
    assert webhook_id not in [w["id"] for w in vigil.webhooks(project_id)]
    with pytest.raises(NotFoundError):
        vigil.delete_webhook(project_id, webhook_id)


@pytest.mark.asyncio
async def test_async_webhook_rotation(
    base_url: str, api_key: str, project_id: str, receiver: Receiver
) -> None:
    async with AsyncVigil(api_key=api_key, base_url=base_url, max_retries=10) as vigil:
        webhook_id = await vigil.create_webhook(project_id, "proxy_vpn_detect", receiver.url)
        try:
            old = await vigil.webhook_secret(project_id, webhook_id)
            new = await vigil.rotate_webhook_secret(project_id, webhook_id)
            assert old and new.startswith("whsec_") and new != old
            assert await vigil.webhook_secret(project_id, webhook_id) == new

            delivery_id = await vigil.test_webhook(project_id, webhook_id)
            got = receiver.next()
            # During the overlap each delivery is signed under both secrets.
            event = AsyncVigil.verify_webhook(got.body, got.headers, new)
            assert AsyncVigil.verify_webhook(got.body, got.headers, old) == event
            assert event["data"]["webhookId"] == webhook_id
            log = await vigil.deliveries(project_id, webhook_id)
            assert delivery_id in [d["id"] for d in log]
        finally:
            await vigil.delete_webhook(project_id, webhook_id)
