"""Sealed verdicts from a real `vigil serve`: opened with the project's keys, refused otherwise.

The demo project seals for this module only (a module fixture turns `sealedResults` on, then
off again), so the other tests see it as before.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

import httpx
import pytest
from conftest import new_session_id
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from vigil_client import AsyncVigil, SealedVerdictError, Vigil
from vigil_client.types import Event, SealedVerdict, SealingKey, SealingKeys

Collect = Callable[[str, str, Optional[str]], httpx.Response]
KID = re.compile(r"^seal_[A-Za-z0-9]{12}$")


@pytest.fixture(scope="module")
def sealing(base_url: str, api_key: str, project_id: str) -> Iterator[SealingKeys]:
    """Turns sealing on for the project under test, and off again after the module."""
    with Vigil(api_key=api_key, base_url=base_url, max_retries=10) as admin:
        assert admin.update_project(project_id, {"sealedResults": True})["sealedResults"] is True
        try:
            yield admin.sealing_key(project_id)
        finally:
            off = admin.update_project(project_id, {"sealedResults": False})
            assert off["sealedResults"] is False


@pytest.fixture(scope="module")
def origin(base_url: str) -> str:
    # The page origin conftest's `collect` posts from.
    return f"http://localhost:{urlsplit(base_url).port}"


def sealed_visit(collect: Collect, project_keys: Tuple[str, str], session: str) -> str:
    """A visit as the browser agent posts it; the answer's sealed verdict."""
    public_key, secret = project_keys
    answer = collect(public_key, session, Vigil.session_token(secret, session, 600))
    assert answer.status_code == 202, answer.text
    data = answer.json()["data"]
    assert set(data) == {"id", "sealed"} and data["id"].startswith("evt_"), data
    sealed: str = data["sealed"]
    return sealed


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def seal(claims: Mapping[str, Any], jwk: Mapping[str, Any], **header: Any) -> str:
    """A JWE built here, as the API builds them: dir + A256GCM, the header's text as AAD."""
    protected = b64(json.dumps({"alg": "dir", "enc": "A256GCM", "kid": jwk["kid"], **header}).encode())
    key = base64.urlsafe_b64decode(jwk["k"] + "=" * (-len(jwk["k"]) % 4))
    iv = os.urandom(12)
    sealed = AESGCM(key).encrypt(iv, json.dumps(claims).encode(), protected.encode())
    return f"{protected}..{b64(iv)}.{b64(sealed[:-16])}.{b64(sealed[-16:])}"


def random_jwk(kid: str) -> Dict[str, Any]:
    return {"kty": "oct", "kid": kid, "k": b64(os.urandom(32)), "alg": "dir", "enc": "A256GCM",
            "use": "enc", "expiresAt": None}  # fmt: skip


def counting_client(fetches: List[str]) -> httpx.Client:
    """An httpx client that notes every answered sealing-key request."""

    def note(response: httpx.Response) -> None:
        if response.request.url.path.endswith("/sealing-key") and response.status_code == 200:
            fetches.append(response.request.url.path)

    return httpx.Client(event_hooks={"response": [note]}, timeout=10)


def refused(reason: str, call: Callable[[], object]) -> SealedVerdictError:
    with pytest.raises(SealedVerdictError) as caught:
        call()
    assert caught.value.reason == reason, caught.value
    return caught.value


def assert_claims_are_the_event(claims: SealedVerdict, event: Event, project_id: str) -> None:
    assert claims["eventId"] == event["id"]
    assert claims["sessionId"] == event["sessionId"]
    assert claims["projectId"] == project_id
    assert claims["scoreBot"] == event["scoreBot"]
    assert claims["scoreProxyVpn"] == event["scoreProxyVpn"]
    assert claims["reasons"] == [r["code"] for r in event["reasons"]]
    assert claims["device"] == event["device"]
    assert claims["agent"] == (event["agent"]["status"] if event["agent"] else None)
    assert claims["createdAt"] == event["createdAt"]
    now = time.time()
    assert claims["iat"] <= now + 5 < claims["exp"] + 5 and claims["exp"] - claims["iat"] <= 600


# --- keys --------------------------------------------------------------------------------------


def test_sealing_on_gives_the_project_a_key(
    sealing: SealingKeys, vigil: Vigil, project_id: str
) -> None:
    assert vigil.project(project_id)["sealedResults"] is True
    assert sealing["sealedResults"] is True and sealing["keys"]
    current: SealingKey = sealing["keys"][0]
    assert (current["kty"], current["alg"], current["enc"], current["use"]) == (
        "oct", "dir", "A256GCM", "enc"
    )  # fmt: skip
    assert KID.match(current["kid"]) and len(current["k"]) == 43
    assert current["expiresAt"] is None


# --- opening -----------------------------------------------------------------------------------


def test_open_sealed_sync(
    sealing: SealingKeys,
    vigil: Vigil,
    collect: Collect,
    project_keys: Tuple[str, str],
    project_id: str,
    origin: str,
    base_url: str,
    api_key: str,
) -> None:
    session = new_session_id("sealed")
    sealed = sealed_visit(collect, project_keys, session)
    # The page holds nothing readable: no session id, no score.
    assert session not in sealed and "score" not in sealed and sealed.split(".")[1] == ""

    keys = vigil.sealing_key(project_id)
    expect = {"sessionId": session, "origin": origin, "projectId": project_id}
    claims = Vigil.open_sealed(sealed, keys, expect=expect)
    assert Vigil.open_sealed(sealed, keys["keys"], expect=expect) == claims  # the list alone too
    assert claims["origin"] == origin
    assert_claims_are_the_event(claims, next(vigil.events(project_id, session)), project_id)

    fetches: List[str] = []
    with counting_client(fetches) as http, Vigil(
        api_key=api_key, base_url=base_url, max_retries=10, http_client=http
    ) as reader:
        assert reader.open_project_sealed(project_id, sealed, expect) == claims
        assert reader.open_project_sealed(project_id, sealed, expect={"sessionId": session}) == claims
    assert len(fetches) == 1, "the keys are fetched once, then cached"


@pytest.mark.asyncio
async def test_open_sealed_async(
    sealing: SealingKeys,
    collect: Collect,
    project_keys: Tuple[str, str],
    project_id: str,
    origin: str,
    base_url: str,
    api_key: str,
) -> None:
    session = new_session_id("sealed_async")
    sealed = sealed_visit(collect, project_keys, session)
    expect = {"sessionId": session, "origin": origin, "projectId": project_id}
    async with AsyncVigil(api_key=api_key, base_url=base_url, max_retries=10) as vigil:
        keys = await vigil.sealing_key(project_id)
        claims = AsyncVigil.open_sealed(sealed, keys, expect=expect)
        assert await vigil.open_project_sealed(project_id, sealed, expect) == claims
        event = [e async for e in vigil.events(project_id, session)][0]
        assert_claims_are_the_event(claims, event, project_id)
        refused(
            "mismatch",
            lambda: AsyncVigil.open_sealed(
                sealed, keys, expect={"sessionId": "someone_else", "projectId": project_id}
            ),
        )
        with pytest.raises(SealedVerdictError) as caught:
            await vigil.open_project_sealed(
                project_id, sealed, {"sessionId": session, "origin": "https://evil.example"}
            )
        assert caught.value.reason == "mismatch"


# --- refusals ----------------------------------------------------------------------------------


def test_refusals(
    sealing: SealingKeys,
    vigil: Vigil,
    collect: Collect,
    project_keys: Tuple[str, str],
    project_id: str,
    origin: str,
) -> None:
    session = new_session_id("sealed_refused")
    sealed = sealed_visit(collect, project_keys, session)
    keys = vigil.sealing_key(project_id)
    current = keys["keys"][0]
    mine = {"sessionId": session, "projectId": project_id}
    claims = Vigil.open_sealed(sealed, keys, expect=mine)

    # Tampered: one character of the ciphertext changed.
    parts = sealed.split(".")
    parts[3] = ("B" if parts[3][0] == "A" else "A") + parts[3][1:]
    refused("forged", lambda: Vigil.open_sealed(".".join(parts), keys, expect=mine))
    # Another key set: the same kid with other bytes, or other kids altogether.
    refused("forged", lambda: Vigil.open_sealed(sealed, [random_jwk(current["kid"])], expect=mine))
    refused(
        "unknown_key",
        lambda: Vigil.open_sealed(sealed, [random_jwk("seal_000000000000")], expect=mine),
    )
    refused("unknown_key", lambda: Vigil.open_sealed(sealed, [], expect=mine))
    # Another session's verdict (a page replaying someone else's), another project's or origin's.
    refused(
        "mismatch",
        lambda: Vigil.open_sealed(sealed, keys, expect={**mine, "sessionId": "sess_x"}),
    )
    refused(
        "mismatch",
        lambda: Vigil.open_sealed(sealed, keys, expect={**mine, "projectId": "prj_other"}),
    )
    refused("mismatch", lambda: Vigil.open_sealed(sealed, keys, expect={**mine, "origin": "x"}))
    assert Vigil.open_sealed(sealed, keys, expect={**mine, "origin": origin}) == claims

    # Built here under the API's key: it opens (the format is the API's), until it expires.
    now = int(time.time())
    fresh = {**claims, "iat": now, "exp": now + 60, "scoreBot": 0.5}
    assert Vigil.open_sealed(seal(fresh, current), keys, expect=mine) == fresh
    expired = {**claims, "iat": now - 700, "exp": now - 100}
    refused("expired", lambda: Vigil.open_sealed(seal(expired, current), keys, expect=mine))
    too_long = {**claims, "iat": now, "exp": now + 3600}
    refused("malformed", lambda: Vigil.open_sealed(seal(too_long, current), keys, expect=mine))
    # Any other algorithm is refused before any key is tried, and so is a broken token.
    for header in ({"enc": "A128GCM"}, {"alg": "A256KW"}, {"zip": "DEF"}):
        refused(
            "unsupported",
            lambda: Vigil.open_sealed(seal(fresh, current, **header), keys, expect=mine),
        )
    refused("malformed", lambda: Vigil.open_sealed("not.a.sealed.verdict", keys, expect=mine))
    refused(
        "malformed", lambda: Vigil.open_sealed(sealed.replace("..", ".AAAA."), keys, expect=mine)
    )
    refused("malformed", lambda: Vigil.open_sealed(sealed + "!", keys, expect=mine))


def test_unknown_kid_refetches_once_and_not_for_each_forgery(
    sealing: SealingKeys, collect: Collect, project_keys: Tuple[str, str], project_id: str,
    base_url: str, api_key: str,
) -> None:  # fmt: skip
    session = new_session_id("sealed_kid")
    sealed = sealed_visit(collect, project_keys, session)
    fetches: List[str] = []
    with counting_client(fetches) as http, Vigil(
        api_key=api_key, base_url=base_url, max_retries=10, http_client=http
    ) as reader:
        mine = {"sessionId": session}
        claims = reader.open_project_sealed(project_id, sealed, mine)
        unknown = seal(claims, random_jwk("seal_AAAAAAAAAAAA"))
        refused(
            "unknown_key",
            lambda: Vigil.open_sealed(unknown, sealing, expect={**mine, "projectId": project_id}),
        )
        # Just fetched: an unknown kid is refused without another call.
        refused("unknown_key", lambda: reader.open_project_sealed(project_id, unknown, mine))
        assert len(fetches) == 1
        # Past the interval, one refetch, then refused: the key is not the project's.
        reader.sealing_key_refetch_interval = 0
        refused("unknown_key", lambda: reader.open_project_sealed(project_id, unknown, mine))
        assert len(fetches) == 2
        # A kid the API could never have issued costs no call at all.
        odd = seal(claims, random_jwk("attacker-chosen"))
        refused("unknown_key", lambda: reader.open_project_sealed(project_id, odd, mine))
        assert len(fetches) == 2
        # A forgery under a known kid is refused from the cache.
        refused("forged", lambda: reader.open_project_sealed(project_id, seal(claims, random_jwk(
            sealing["keys"][0]["kid"])), mine))  # fmt: skip
        assert len(fetches) == 2


# --- rotation (last: it changes the project's key) ----------------------------------------------


@pytest.mark.asyncio
async def test_rotation_is_picked_up_by_a_cached_reader(
    sealing: SealingKeys,
    vigil: Vigil,
    collect: Collect,
    project_keys: Tuple[str, str],
    project_id: str,
    base_url: str,
    api_key: str,
) -> None:
    before_session = new_session_id("sealed_before")
    before = sealed_visit(collect, project_keys, before_session)
    earlier = {"sessionId": before_session}
    async with AsyncVigil(api_key=api_key, base_url=base_url, max_retries=10) as reader:
        reader.sealing_key_refetch_interval = 0  # the rotation follows the first fetch at once
        old = await reader.open_project_sealed(project_id, before, earlier)

        rotated = vigil.rotate_sealing_key(project_id)
        old_kid = sealing["keys"][0]["kid"]
        assert rotated["keys"][0]["kid"] != old_kid and rotated["keys"][0]["expiresAt"] is None
        assert rotated["keys"][1]["kid"] == old_kid and rotated["keys"][1]["expiresAt"]

        session = new_session_id("sealed_after")
        after = sealed_visit(collect, project_keys, session)
        claims = await reader.open_project_sealed(project_id, after, {"sessionId": session})
        assert claims["sessionId"] == session
        # The replaced key stays listed for its overlap: a verdict sealed just before opens.
        assert Vigil.open_sealed(before, rotated, expect={**earlier, "projectId": project_id}) == old
        assert await reader.open_project_sealed(project_id, before, earlier) == old
    # The client that rotated holds the new keys already: no fetch, the new verdict opens.
    assert vigil.open_project_sealed(project_id, after, {"sessionId": session}) == claims
