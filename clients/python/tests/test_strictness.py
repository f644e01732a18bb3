"""Offline checks: ``expect`` is required to open a sealed verdict, base64url is strict, and the
base URL takes the origin or the API reference's base (with ``/v1``) and refuses anything else."""

from __future__ import annotations

import base64
import json
import os
import socket
import time
from typing import Any, Callable, Dict

import pytest

from vigil_client import AsyncVigil, SealedVerdictError, Vigil

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


KEY = {"kty": "oct", "kid": "seal_TESTTESTTEST", "k": b64(os.urandom(32)), "alg": "dir",
       "enc": "A256GCM", "use": "enc", "expiresAt": None}  # fmt: skip
NOW = int(time.time())
CLAIMS: Dict[str, Any] = {
    "eventId": "evt_1", "sessionId": "sess_a", "projectId": "prj_a", "scoreBot": 0.1,
    "scoreProxyVpn": 0.0, "reasons": [], "device": None, "agent": None,
    "createdAt": "2026-01-01T00:00:00.000Z", "origin": "https://shop.example",
    "iat": NOW, "exp": NOW + 300,
}  # fmt: skip
EXPECT = {"sessionId": "sess_a", "projectId": "prj_a"}


def seal(claims: Dict[str, Any]) -> str:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    header = b64(json.dumps({"alg": "dir", "enc": "A256GCM", "kid": KEY["kid"]}).encode())
    iv = os.urandom(12)
    key = base64.urlsafe_b64decode(str(KEY["k"]) + "=")
    sealed = AESGCM(key).encrypt(iv, json.dumps(claims).encode(), header.encode())
    return f"{header}..{b64(iv)}.{b64(sealed[:-16])}.{b64(sealed[-16:])}"


SEALED = seal(CLAIMS)


def with_part(index: int, change: Callable[[str], str]) -> str:
    parts = SEALED.split(".")
    parts[index] = change(parts[index])
    return ".".join(parts)


def non_canonical(part: str) -> str:
    """The last character with its spare low bits set: a lax decoder reads the same bytes."""
    spare = {2: 4, 3: 2}[len(part) % 4]
    last = ALPHABET.index(part[-1])
    changed = part[:-1] + ALPHABET[last | ((1 << spare) - 1)]
    assert changed != part
    pad = "=" * (-len(part) % 4)
    assert base64.urlsafe_b64decode(changed + pad) == base64.urlsafe_b64decode(part + pad)
    return changed


def malformed(sealed: str, keys: Any = None) -> None:
    with pytest.raises(SealedVerdictError) as caught:
        Vigil.open_sealed(sealed, keys or [KEY], expect=EXPECT)
    assert caught.value.reason == "malformed", caught.value


# --- expect --------------------------------------------------------------------------------------


def test_open_sealed_requires_the_session_and_the_project() -> None:
    assert Vigil.open_sealed(SEALED, [KEY], expect=EXPECT) == CLAIMS
    with pytest.raises(TypeError):
        Vigil.open_sealed(SEALED, [KEY])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="sessionId"):
        Vigil.open_sealed(SEALED, [KEY], expect=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sessionId is missing"):
        Vigil.open_sealed(SEALED, [KEY], expect={})
    with pytest.raises(TypeError, match="projectId is missing"):
        Vigil.open_sealed(SEALED, [KEY], expect={"sessionId": "sess_a"})
    with pytest.raises(TypeError, match="sessionId is missing"):
        AsyncVigil.open_sealed(SEALED, [KEY], expect={"projectId": "prj_a"})
    with pytest.raises(TypeError, match="sessionId"):
        Vigil.open_sealed(SEALED, [KEY], expect={"sessionId": "", "projectId": "prj_a"})
    with pytest.raises(TypeError, match="cannot expect 'session_id'"):
        Vigil.open_sealed(SEALED, [KEY], expect={**EXPECT, "session_id": "sess_a"})


def test_another_visitors_or_projects_verdict_is_a_mismatch() -> None:
    for other in ({"sessionId": "sess_b"}, {"projectId": "prj_b"}, {"origin": "https://evil.example"}):
        with pytest.raises(SealedVerdictError) as caught:
            Vigil.open_sealed(SEALED, [KEY], expect={**EXPECT, **other})
        assert caught.value.reason == "mismatch"
    good = {**EXPECT, "origin": "https://shop.example"}
    assert Vigil.open_sealed(SEALED, {"keys": [KEY]}, expect=good) == CLAIMS


def test_open_project_sealed_needs_the_session_before_any_call() -> None:
    with socket.socket() as sock:  # a stopped Vigil: a call would be a VigilConnectionError
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with Vigil(api_key="vgl_live_x", base_url=url) as vigil:
        with pytest.raises(TypeError):
            vigil.open_project_sealed("prj_a", SEALED)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="sessionId is missing"):
            vigil.open_project_sealed("prj_a", SEALED, {})
        with pytest.raises(TypeError, match="is not the project"):
            vigil.open_project_sealed("prj_a", SEALED, {"sessionId": "sess_a", "projectId": "prj_b"})


@pytest.mark.asyncio
async def test_async_open_project_sealed_needs_the_session() -> None:
    async with AsyncVigil(api_key="vgl_live_x", base_url="http://127.0.0.1:9") as vigil:
        with pytest.raises(TypeError, match="sessionId is missing"):
            await vigil.open_project_sealed("prj_a", SEALED, {"origin": "https://shop.example"})


# --- base64url -----------------------------------------------------------------------------------


def test_padding_is_refused() -> None:
    malformed(with_part(4, lambda p: p + "=="))
    malformed(with_part(0, lambda p: p + "=" * (-len(p) % 4 or 4)))


def test_the_standard_alphabet_is_refused() -> None:
    malformed(with_part(3, lambda p: p[:4] + "+" + p[5:]))
    malformed(with_part(3, lambda p: p[:4] + "/" + p[5:]))


def test_whitespace_is_refused_inside_and_around() -> None:
    malformed(with_part(3, lambda p: p[:8] + "\n" + p[8:]))
    malformed(with_part(3, lambda p: p + "\n"))  # `$` of a regex would have let this one by
    malformed(" " + SEALED)
    malformed(SEALED + "\n")


def test_non_canonical_last_characters_are_refused() -> None:
    malformed(with_part(4, non_canonical))  # the tag: 16 bytes, 22 characters, 4 spare bits
    # A key whose k is not canonical is not used: the verdict has no key to open with.
    lax = {**KEY, "k": non_canonical(str(KEY["k"]))}
    with pytest.raises(SealedVerdictError) as caught:
        Vigil.open_sealed(SEALED, [lax], expect=EXPECT)
    assert caught.value.reason == "unknown_key"
    assert Vigil.open_sealed(SEALED, [KEY], expect=EXPECT) == CLAIMS  # the original still opens


def test_a_lifetime_past_ten_minutes_is_refused() -> None:
    malformed(seal({**CLAIMS, "exp": NOW + 3600}))
    malformed(seal({k: v for k, v in CLAIMS.items() if k != "iat"}))


# --- base URL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, used",
    [
        ("https://vigil.example", "https://vigil.example"),
        ("https://vigil.example/", "https://vigil.example"),
        ("https://vigil.example/v1", "https://vigil.example"),
        ("https://vigil.example/v1/", "https://vigil.example"),
        ("https://Vigil.Example:8443/v1", "https://vigil.example:8443"),
        ("https://example.com/vigil/v1", "https://example.com/vigil"),
        ("https://vigil.example/v10", "https://vigil.example/v10"),
    ],
)
def test_base_url_with_or_without_v1(given: str, used: str) -> None:
    assert Vigil(api_key="vgl_live_x", base_url=given).base_url == used
    assert AsyncVigil(api_key="vgl_live_x", base_url=given).base_url == used


@pytest.mark.parametrize(
    "given, why",
    [
        ("vigil.example", "not a URL"),
        ("ftp://vigil.example", "not http"),
        ("https://vigil.example/v1?x=1", "query or fragment"),
        ("https://vigil.example/#top", "query or fragment"),
        ("https://user:pw@vigil.example", "credentials"),
        ("http://vigil.example:port", "not a URL"),
    ],
)
def test_base_url_that_cannot_work_is_refused_with_why(given: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        Vigil(api_key="vgl_live_x", base_url=given)


def test_base_url_with_v1_reaches_the_real_api(base_url: str, api_key: str) -> None:
    for suffix in ("/v1", "/v1/"):
        with Vigil(api_key=api_key, base_url=base_url + suffix, max_retries=10) as vigil:
            assert vigil.base_url == base_url
            assert vigil.plan()["id"]
