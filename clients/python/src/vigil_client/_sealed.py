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
from typing import Any, List, Mapping, Optional, Sequence, Union, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import SealedVerdictError
from .types import SealedVerdict, SealingKey, SealingKeys

#: What ``open_sealed`` takes as keys: ``sealing_key()``'s answer, or its ``keys`` list.
KeySet = Union[SealingKeys, Sequence[SealingKey], Mapping[str, Any], Sequence[Mapping[str, Any]]]

_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")
#: A 32-byte key is 43 base64url characters without padding.
_KEY_LENGTH = 32
_IV_LENGTH = 12
_TAG_LENGTH = 16


def _b64decode(part: str, what: str) -> bytes:
    # Strict: only the base64url alphabet, no padding (the stdlib decoder would skip strangers).
    if not _B64URL.match(part) or len(part) % 4 == 1:
        raise SealedVerdictError(f"the {what} is not base64url", reason="malformed")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError) as exc:
        raise SealedVerdictError(f"the {what} is not base64url", reason="malformed") from exc


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
        header = json.loads(_b64decode(sealed.split(".", 1)[0], "header"))
    except (SealedVerdictError, ValueError):
        return None
    kid = header.get("kid") if isinstance(header, dict) else None
    return kid if isinstance(kid, str) else None


def open_sealed(
    sealed: str, keys: KeySet, *, expect: Optional[Mapping[str, Any]] = None
) -> SealedVerdict:
    """Opens a sealed verdict with the project's keys and returns its claims once trusted.

    ``keys`` is ``sealing_key(project_id)``'s answer, or its ``keys`` list; the key is the one
    the JWE's ``kid`` names. The verdict is trusted only if it is ``dir``/``A256GCM``, opens
    (authenticated) under that key, has not expired (``exp``, Unix seconds), and every member
    of ``expect`` (``{"sessionId": ..., "origin": ...}``) equals its claim. Otherwise
    :class:`SealedVerdictError` is raised, with a ``reason``. No network.
    """
    if not isinstance(sealed, str):
        raise SealedVerdictError("a sealed verdict is a string", reason="malformed")
    parts = sealed.strip().split(".")
    if len(parts) != 5:
        raise SealedVerdictError("not a compact JWE (five parts)", reason="malformed")
    header_b64, encrypted_key, iv_b64, ciphertext_b64, tag_b64 = parts
    try:
        header = json.loads(_b64decode(header_b64, "header"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise SealedVerdictError("the header is not JSON", reason="malformed") from exc
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

    try:
        claims: Any = json.loads(plain)
    except ValueError as exc:
        raise SealedVerdictError("the claims are not JSON", reason="malformed") from exc
    if not isinstance(claims, dict):
        raise SealedVerdictError("the claims are not a JSON object", reason="malformed")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        raise SealedVerdictError("the verdict has no exp", reason="malformed")
    if exp <= now:
        raise SealedVerdictError("the verdict has expired", reason="expired")
    for name, value in (expect or {}).items():
        if name not in claims or claims[name] != value:
            raise SealedVerdictError(
                f"{name} is {claims.get(name)!r}, not {value!r}", reason="mismatch"
            )
    return cast(SealedVerdict, claims)


#: A kid the API could have issued (schema ``SealingKey``); only such a kid is worth a refetch.
_KID_PATTERN = re.compile(r"^seal_[A-Za-z0-9]{12}$")
#: ``open_project_sealed`` refetches a project's keys for an unknown kid at most this often.
DEFAULT_REFETCH_INTERVAL = 5.0


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
    "DEFAULT_REFETCH_INTERVAL",
    "CachedKeys",
    "KeySet",
    "header_kid",
    "open_sealed",
    "worth_refetching",
]
