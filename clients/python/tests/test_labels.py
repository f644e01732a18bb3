"""Labels and quality (PUT/DELETE .../label, GET labels, GET quality) against a real `vigil serve`.

Each test labels sessions of its own and withdraws every label it gave, so the project's labels
are as it found them; quality is checked by how much it moved.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import List

import httpx
import pytest
from conftest import new_session_id

from vigil_client import AsyncVigil, NotFoundError, ValidationError, Vigil
from vigil_client.types import Label, NewEvent, Quality

# A Tor exit and curl: flagged as a bot (test_client relies on the same). Labelled "human",
# it is a false positive.
FLAGGED: NewEvent = {"ipAddress": "185.220.101.1", "userAgent": "curl/8.5.0"}
ORDINARY: NewEvent = {
    "ipAddress": "198.51.100.23",
    "userAgent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
}
NOTE = "Kiosk in the store"


def check_label(label: Label, session: str, kind: str) -> None:
    assert label["sessionId"] == session and label["label"] == kind
    assert 0 <= label["scoreBot"] <= 1
    assert isinstance(label["reasons"], list) and all(isinstance(r, str) for r in label["reasons"])
    assert label["labelledAt"].endswith("Z")


def check_quality_moved(before: Quality, after: Quality, human: Label, bot: Label) -> None:
    """`after` is `before` plus the two labels (one human, one bot), as the threshold says."""
    threshold = after["threshold"]
    assert 0 <= threshold <= 1
    assert after["labelled"] == before["labelled"] + 2
    assert after["humans"] == before["humans"] + 1
    assert after["bots"] == before["bots"] + 1
    assert human["scoreBot"] >= threshold  # FLAGGED: a person flagged as a bot
    assert after["falsePositives"] == before["falsePositives"] + 1
    missed = 1 if bot["scoreBot"] < threshold else 0
    assert after["missedBots"] == before["missedBots"] + missed
    for share in (after["precision"], after["recall"]):
        assert share is None or 0 <= share <= 1
    assert after["precision"] is not None  # at least the flagged session is there to divide
    assert after["recall"] is not None  # and at least one bot
    for counts in (after["falsePositiveReasons"], after["missedBotReasons"]):
        assert len(counts) <= 10
        for code, count in counts:  # (code, count) tuples, most first
            assert isinstance(code, str) and isinstance(count, int) and count >= 1
        assert [c for _, c in counts] == sorted((c for _, c in counts), reverse=True)
    fp_codes = [code for code, _ in after["falsePositiveReasons"]]
    assert set(human["reasons"]) & set(fp_codes) or len(fp_codes) == 10


# --- sync ------------------------------------------------------------------------------------


def test_label_list_quality_unlabel(base_url: str, api_key: str, project_id: str) -> None:
    pages: List[int] = []

    def count(response: httpx.Response) -> None:
        # Pages answered (a 429 retried under the demo plan is still one page).
        if response.status_code == 200 and response.request.url.path.endswith("/labels"):
            response.read()
            pages.append(len(response.json()["data"]))

    http = httpx.Client(event_hooks={"response": [count]})
    with Vigil(api_key=api_key, base_url=base_url, max_retries=10, http_client=http) as vigil:
        human_session, bot_session = new_session_id("label"), new_session_id("label")
        vigil.create_event(project_id, human_session, FLAGGED)
        vigil.create_event(project_id, bot_session, ORDINARY)
        before = vigil.quality(project_id)
        try:
            human = vigil.label_session(
                project_id, human_session, "human", reason="support_ticket", note=NOTE
            )
            check_label(human, human_session, "human")
            assert human["reason"] == "support_ticket" and human["note"] == NOTE

            # Idempotent: the same label again replaces it, and it is still one label.
            again = vigil.label_session(
                project_id, human_session, "human", reason="support_ticket", note=NOTE
            )
            assert {k: v for k, v in again.items() if k != "labelledAt"} == {
                k: v for k, v in human.items() if k != "labelledAt"
            }
            bot = vigil.label_session(project_id, bot_session, "bot")
            check_label(bot, bot_session, "bot")
            assert bot["reason"] is None and bot["note"] is None
            assert vigil.label(project_id, bot_session) == bot

            listed = list(vigil.labels(project_id, limit=1))
            ids = [label["sessionId"] for label in listed]
            assert ids.count(human_session) == 1 and ids.count(bot_session) == 1
            assert ids == sorted(ids)  # by session id, across pages
            assert len(pages) >= len(listed) >= 2 and all(n <= 1 for n in pages)
            assert next(x for x in listed if x["sessionId"] == human_session) == again

            after = vigil.quality(project_id)
            check_quality_moved(before, after, human, bot)
            now = datetime.now(timezone.utc)
            hour_ago, soon = now - timedelta(hours=1), now + timedelta(minutes=5)
            ranged = vigil.quality(project_id, from_=hour_ago, to=soon)
            assert ranged["labelled"] >= 2 and ranged["humans"] >= 1 and ranged["bots"] >= 1
            # A range before the labels were given does not count them.
            early = vigil.quality(
                project_id, from_=now - timedelta(days=2), to=now - timedelta(days=1)
            )
            assert early["labelled"] <= after["labelled"] - 2

            vigil.unlabel_session(project_id, human_session)  # answers data: null
            with pytest.raises(NotFoundError) as gone:
                vigil.unlabel_session(project_id, human_session)
            assert gone.value.status == 404 and gone.value.message == "Label not found"
            with pytest.raises(NotFoundError):
                vigil.label(project_id, human_session)
            assert human_session not in [x["sessionId"] for x in vigil.labels(project_id)]
        finally:
            for session in (human_session, bot_session):
                try:
                    vigil.unlabel_session(project_id, session)
                except NotFoundError:
                    pass
        assert vigil.quality(project_id)["labelled"] == before["labelled"]
    http.close()


def test_label_errors(vigil: Vigil, project_id: str) -> None:
    with pytest.raises(NotFoundError) as unknown:
        vigil.label_session(project_id, new_session_id("never_seen"), "bot")
    assert unknown.value.status == 404 and unknown.value.message == "Session not found"

    session = new_session_id("label")
    vigil.create_event(project_id, session, ORDINARY)
    with pytest.raises(ValidationError) as bad:
        vigil.label_session(project_id, session, "robot")  # type: ignore[arg-type]
    assert bad.value.status == 400 and "label" in bad.value.message
    with pytest.raises(ValidationError) as bad_reason:
        vigil.label_session(project_id, session, "bot", reason="Not A Code")
    assert bad_reason.value.status == 400 and "reason" in bad_reason.value.message
    with pytest.raises(ValidationError):
        vigil.label_session(project_id, session, "bot", note="x" * 501)
    # Nothing was stored by the refused requests.
    with pytest.raises(NotFoundError):
        vigil.unlabel_session(project_id, session)


# --- async -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_async_labels(base_url: str, api_key: str, project_id: str) -> None:
    async with AsyncVigil(api_key=api_key, base_url=base_url, max_retries=10) as vigil:
        human_session, bot_session = new_session_id("alabel"), new_session_id("alabel")
        await vigil.create_event(project_id, human_session, FLAGGED)
        await vigil.create_event(project_id, bot_session, ORDINARY)
        before = await vigil.quality(project_id)
        try:
            human = await vigil.label_session(
                project_id, human_session, "human", reason="chargeback_refunded", note=NOTE
            )
            check_label(human, human_session, "human")
            assert human["reason"] == "chargeback_refunded" and human["note"] == NOTE
            again = await vigil.label_session(
                project_id, human_session, "human", reason="chargeback_refunded", note=NOTE
            )
            assert again["sessionId"] == human_session and again["reason"] == human["reason"]
            bot = await vigil.label_session(project_id, bot_session, "bot", reason="scraper")
            check_label(bot, bot_session, "bot")

            listed = [x async for x in vigil.labels(project_id, limit=1)]
            ids = [x["sessionId"] for x in listed]
            assert ids.count(human_session) == 1 and ids.count(bot_session) == 1
            assert ids == sorted(ids)

            after = await vigil.quality(project_id)
            check_quality_moved(before, after, human, bot)
            now = datetime.now(timezone.utc)
            hour_ago, soon = now - timedelta(hours=1), now + timedelta(minutes=5)
            ranged = await vigil.quality(project_id, from_=hour_ago, to=soon)
            assert ranged["labelled"] >= 2

            await vigil.unlabel_session(project_id, human_session)
            with pytest.raises(NotFoundError):
                await vigil.unlabel_session(project_id, human_session)
        finally:
            for session in (human_session, bot_session):
                try:
                    await vigil.unlabel_session(project_id, session)
                except NotFoundError:
                    pass

        with pytest.raises(NotFoundError):
            await vigil.label_session(project_id, new_session_id("never_seen"), "human")
        with pytest.raises(ValidationError):
            await vigil.label_session(project_id, bot_session, "robot")  # type: ignore[arg-type]
