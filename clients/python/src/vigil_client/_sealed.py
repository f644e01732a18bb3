"""Sealed verdicts: opening the JWE a sealing project's collect route hands the page.

The format is JWE compact serialisation (RFC 7516) with ``alg: dir`` and ``enc: A256GCM``
(RFC 7518): the project's 256-bit key itself (no encrypted key), a 96-bit IV, the protected
header's base64url text as the additional data, a 128-bit tag. One algorithm pair needs no JOSE
library: AES-GCM from ``cryptography`` does it, and refusing every other ``alg``/``enc`` here is
what keeps a forged header from choosing a weaker one.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import SealedVerdictError
from .types import SealedVerdict, SealingKey, SealingKeys

#: What ``open_sealed`` takes as keys: ``sealing_key()``'s answer, or its ``keys`` list.
KeySet = Union[SealingKeys, Sequence[SealingKey], Mapping[str, Any], Sequence[Mapping[str, Any]]]

_B64URL = re.compile(r"[A-Za-z0-9_-]*")
#: A 32-byte key is 43 base64url characters without padding.
_KEY_LENGTH = 32
_IV_LENGTH = 12
_TAG_LENGTH = 16
#: The longest a verdict Vigil seals is valid (``exp - iat``).
MAX_SEALED_LIFETIME = 600
#: The claims ``expect`` may name; ``sessionId`` and ``projectId`` are required.
EXPECTABLE = ("eventId", "sessionId", "projectId", "origin", "device", "agent")
REQUIRED_EXPECTATIONS = ("sessionId", "projectId")


def _b64decode(part: str, what: str) -> bytes:
    """Strict base64url (RFC 7515 2): the URL-safe alphabet only, no padding, no whitespace, and
    canonical: re-encoding gives the same text, so a changed spare bit in the last character (a
    second spelling of the same bytes) is refused rather than read past."""
    if not isinstance(part, str) or not _B64URL.fullmatch(part) or len(part) % 4 == 1:
        raise SealedVerdictError(f"the {what} is not base64url", reason="malformed")
    try:
        data = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError) as exc:
        raise SealedVerdictError(f"the {what} is not base64url", reason="malformed") from exc
    if base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii") != part:
        raise SealedVerdictError(f"the {what} is not canonical base64url", reason="malformed")
    return data


def _json(data: bytes, what: str) -> Any:
    """JSON in UTF-8 only (``json.loads`` would also guess UTF-16 and UTF-32 from bytes)."""
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise SealedVerdictError(f"the {what} is not JSON", reason="malformed") from exc


def check_expectations(expect: object) -> Dict[str, Any]:
    """``expect`` as ``open_sealed`` compares it; a ``TypeError`` without the session or project.

    A verdict opened without them would be anyone's: another visitor's (a page replaying a
    verdict it was handed) or another project's. That is a programming error, raised at once,
    never a verdict that opens anyway.
    """
    usage = (
        "open_sealed needs expect={'sessionId': ..., 'projectId': ...} at least (the visitor's "
        "session and your project), else another visitor's or another project's verdict would open"
    )
    if not isinstance(expect, Mapping):
        raise TypeError(usage)
    for name in REQUIRED_EXPECTATIONS:
        value = expect.get(name)
        if not isinstance(value, str) or not value:
            raise TypeError(f"{usage}: {name} is {'missing' if value is None else repr(value)}")
    checks: Dict[str, Any] = {}
    for name, value in expect.items():
        if name not in EXPECTABLE:
            raise TypeError(f"open_sealed cannot expect {name!r}; it compares {', '.join(EXPECTABLE)}")
        checks[name] = value
    return checks


def _parse_time(value: str) -> Optional[float]:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


_KEYS_TYPE = "keys: a list of JWKs, or sealing_key()'s answer ({sealedResults, keys})"


def _key_list(keys: KeySet) -> List[Mapping[str, Any]]:
    if isinstance(keys, Mapping):
        listed = keys.get("keys")
        if not isinstance(listed, list):
            raise TypeError(_KEYS_TYPE)
        return cast(List[Mapping[str, Any]], listed)
    if isinstance(keys, (str, bytes)):
        raise TypeError(_KEYS_TYPE)
    return list(cast(Sequence[Mapping[str, Any]], keys))


def _find_key(keys: KeySet, kid: str, now: float) -> Optional[bytes]:
    """The bytes of the usable key named ``kid``: an ``oct`` JWK, not past its ``expiresAt``."""
    for jwk in _key_list(keys):
        if not isinstance(jwk, Mapping) or jwk.get("kid") != kid or jwk.get("kty") != "oct":
            continue
        if jwk.get("alg", "dir") != "dir" or jwk.get("enc", "A256GCM") != "A256GCM":
            continue
        expires = jwk.get("expiresAt")
        if isinstance(expires, str):
            until = _parse_time(expires)
            if until is not None and until <= now:
                continue  # rotated out and its overlap is over: no longer the project's key
        k = jwk.get("k")
        if not isinstance(k, str):
            continue
        try:
            key = _b64decode(k, "key")
        except SealedVerdictError:
            continue
        if len(key) == _KEY_LENGTH:
            return key
    return None


def header_kid(sealed: str) -> Optional[str]:
    """The ``kid`` of a sealed verdict's protected header, unverified (None if unreadable)."""
    try:
        header = _json(_b64decode(sealed.split(".", 1)[0], "header"), "header")
    except SealedVerdictError:
        return None
    kid = header.get("kid") if isinstance(header, dict) else None
    return kid if isinstance(kid, str) else None


def open_sealed(sealed: str, keys: KeySet, *, expect: Mapping[str, Any]) -> SealedVerdict:
    """Opens a sealed verdict with the project's keys and returns its claims once trusted.

    ``keys`` is ``sealing_key(project_id)``'s answer, or its ``keys`` list; the key is the one
    the JWE's ``kid`` names. ``expect`` is required and names at least the visitor's
    ``sessionId`` and your ``projectId`` (add ``origin``: ``https://shop.example``); without them
    a ``TypeError`` is raised before anything else. The verdict is trusted only if it is
    ``dir``/``A256GCM`` in strict base64url, opens (authenticated) under that key, has not
    expired (``exp``, Unix seconds, at most 10 minutes after ``iat``), and every member of
    ``expect`` equals its claim. Otherwise :class:`SealedVerdictError` is raised, with a
    ``reason``. No network.
    """
    checks = check_expectations(expect)
    if not isinstance(sealed, str):
        raise SealedVerdictError("a sealed verdict is a string", reason="malformed")
    # As the API answered it: no whitespace around or inside (each segment is strict too).
    parts = sealed.split(".")
    if len(parts) != 5:
        raise SealedVerdictError("not a compact JWE (five parts)", reason="malformed")
    header_b64, encrypted_key, iv_b64, ciphertext_b64, tag_b64 = parts
    header = _json(_b64decode(header_b64, "header"), "header")
    if not isinstance(header, dict):
        raise SealedVerdictError("the header is not a JSON object", reason="malformed")
    if header.get("alg") != "dir" or header.get("enc") != "A256GCM":
        raise SealedVerdictError(
            f"alg {header.get('alg')!r} / enc {header.get('enc')!r}: only dir / A256GCM",
            reason="unsupported",
        )
    if "crit" in header or "zip" in header:
        raise SealedVerdictError("a crit or zip header is not supported", reason="unsupported")
    if encrypted_key:
        raise SealedVerdictError("alg dir has an empty encrypted key", reason="malformed")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise SealedVerdictError("the header names no kid", reason="malformed")
    iv = _b64decode(iv_b64, "IV")
    ciphertext = _b64decode(ciphertext_b64, "ciphertext")
    tag = _b64decode(tag_b64, "tag")
    if len(iv) != _IV_LENGTH or len(tag) != _TAG_LENGTH:
        raise SealedVerdictError("A256GCM needs a 12-byte IV and a 16-byte tag", reason="malformed")

    now = time.time()
    key = _find_key(keys, kid, now)
    if key is None:
        raise SealedVerdictError(f"no key {kid!r} among the given keys", reason="unknown_key")
    try:
        # RFC 7516 5.2: the additional data is the ASCII of the encoded protected header.
        plain = AESGCM(key).decrypt(iv, ciphertext + tag, header_b64.encode("ascii"))
    except InvalidTag as exc:
        raise SealedVerdictError("the verdict does not authenticate", reason="forged") from exc

    claims = _json(plain, "claims")
    if not isinstance(claims, dict):
        raise SealedVerdictError("the claims are not a JSON object", reason="malformed")
    exp, iat = claims.get("exp"), claims.get("iat")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        raise SealedVerdictError("the verdict has no exp", reason="malformed")
    if isinstance(iat, bool) or not isinstance(iat, (int, float)) or not iat <= exp:
        raise SealedVerdictError("the verdict has no iat before its exp", reason="malformed")
    if exp - iat > MAX_SEALED_LIFETIME:
        raise SealedVerdictError(
            f"the verdict claims a lifetime of {exp - iat} s; Vigil seals for at most "
            f"{MAX_SEALED_LIFETIME} s",
            reason="malformed",
        )
    if exp <= now:
        raise SealedVerdictError("the verdict has expired", reason="expired")
    for name, value in checks.items():
        if name not in claims or claims[name] != value:
            raise SealedVerdictError(
                f"{name} is {claims.get(name)!r}, not {value!r}", reason="mismatch"
            )
    return cast(SealedVerdict, claims)


def project_expectations(project_id: str, expect: object) -> Dict[str, Any]:
    """``expect`` of ``open_project_sealed``: the project is the method's own argument."""
    if isinstance(expect, Mapping):
        given = expect.get("projectId")
        if given is not None and given != project_id:
            raise TypeError(f"expect['projectId'] {given!r} is not the project {project_id!r}")
        expect = {**expect, "projectId": project_id}
    return check_expectations(expect)


#: A kid the API could have issued (schema ``SealingKey``); only such a kid is worth a refetch.
_KID_PATTERN = re.compile(r"^seal_[A-Za-z0-9]{12}$")
#: ``open_project_sealed`` refetches a project's keys for an unknown kid at most this often.
DEFAULT_REFETCH_INTERVAL = 5.0
#: ``open_project_sealed`` waits at most this long for the keys it does not hold (seconds).
DEFAULT_KEYS_TIMEOUT = 2.0


@dataclass(frozen=True)
class CachedKeys:
    """A project's keys as a client last fetched them, and when (``time.monotonic()``)."""

    keys: SealingKeys
    fetched_at: float = field(default_factory=time.monotonic)


def worth_refetching(
    error: SealedVerdictError, sealed: str, cached: CachedKeys, interval: float
) -> bool:
    """Whether a refusal may be a key newer than the cached ones (a rotation since the fetch).

    Only for an unknown kid of the API's shape, and not again within ``interval`` seconds of the
    last fetch: the kid is the page's to choose, and forged ones must not turn each checkout
    into a call to the API (the plan's rate and quota are the backend's).
    """
    if error.reason != "unknown_key":
        return False
    kid = header_kid(sealed)
    if kid is None or not _KID_PATTERN.match(kid):
        return False
    return time.monotonic() - cached.fetched_at >= interval


__all__ = [
    "DEFAULT_KEYS_TIMEOUT",
    "DEFAULT_REFETCH_INTERVAL",
    "MAX_SEALED_LIFETIME",
    "CachedKeys",
    "KeySet",
    "check_expectations",
    "header_kid",
    "open_sealed",
    "project_expectations",
    "worth_refetching",
]
