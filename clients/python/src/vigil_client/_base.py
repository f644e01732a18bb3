"""What the sync and async clients share: configuration, answers, rate limits, tokens, webhooks.

The two clients differ only in how they wait (``time.sleep`` or ``anyio.sleep``) and send;
everything that decides *what* to send or *what an answer means* lives here, once.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Mapping, Optional, Union, cast
from urllib.parse import quote, urlsplit

import httpx
from standardwebhooks.webhooks import Webhook as _StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError as _StandardWebhookError

from ._version import __version__
from .errors import VigilError, WebhookVerificationError, error_for
from .types import LabelKind, NewLabel, Quality, WebhookEvent

DEFAULT_BASE_URL = "http://127.0.0.1:3000"
DEFAULT_TIMEOUT = 10.0
#: The server bounds a session token's lifetime to 24 hours.
MAX_TOKEN_TTL = 86400
#: A 429's Retry-After is honoured up to this many seconds; a longer wait is the caller's call.
MAX_RETRY_AFTER = 30.0
#: The API's id alphabet (schema ``Id``): a session id outside it would be refused anyway, and
#: checking here turns a confusing 401 at collect time into an error where the id was made.
ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")
_LINK_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?', re.IGNORECASE)

ParamValue = Union[str, int, float]
Params = Dict[str, ParamValue]


def resolve_base_url(base_url: Optional[str]) -> str:
    """The API's base as the client uses it: no trailing slash, no ``/v1`` (each route adds it).

    Both the origin (``https://vigil.example``) and the API reference's base with the version
    (``https://vigil.example/v1``, with or without a final slash) are accepted; a path prefix
    before it (``https://example.com/vigil``) is kept. Anything but an http(s) URL without query,
    fragment or credentials is a ``ValueError`` naming what is wrong, here rather than a bare
    404 at the first call.
    """
    raw = base_url or os.environ.get("VIGIL_BASE_URL") or DEFAULT_BASE_URL
    text = raw.strip() if isinstance(raw, str) else ""
    try:
        parts = urlsplit(text)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or not parts.scheme or not parts.hostname:
        raise ValueError(
            f"base_url {raw!r} is not a URL; give the API's address, e.g. https://vigil.example"
        )
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(
            f"base_url {raw!r} is not http(s); give the API's address, e.g. https://vigil.example"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError("base_url must not carry credentials; the developer key goes in api_key")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise ValueError(f"base_url {raw!r} has a query or fragment; give the API's address only")
    path = parts.path.rstrip("/")
    # The API documents its server as `/v1`; a base URL copied with it would otherwise
    # become `/v1/v1/...` and 404 on every call.
    if path.endswith("/v1"):
        path = path[: -len("/v1")].rstrip("/")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


def resolve_api_key(api_key: Optional[str]) -> str:
    key = api_key or os.environ.get("VIGIL_API_KEY")
    if not key:
        raise ValueError("a developer key is required: pass api_key= or set VIGIL_API_KEY")
    return key


def default_headers(api_key: str) -> Dict[str, str]:
    return {
        "Authorization": f"Bearer {api_key}",
        "Accept": "application/json",
        "User-Agent": f"vigil-client-python/{__version__}",
    }


def seg(value: str) -> str:
    """One path segment: quoted so an id can never reach another route (``../``, ``?``)."""
    return quote(value, safe="")


def timestamp_param(value: Union[str, datetime]) -> str:
    """RFC 3339 as the API writes it; a naive datetime is taken as UTC, not local time."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    text = value.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def drop_none(params: Mapping[str, Optional[ParamValue]]) -> Params:
    return {k: v for k, v in params.items() if v is not None}


def next_link(header: Optional[str]) -> Optional[str]:
    """The ``rel="next"`` target of a ``Link`` header, as given (the API's cursor is opaque)."""
    if not header:
        return None
    match = _LINK_NEXT.search(header)
    return match.group(1) if match else None


def retry_delay(response: httpx.Response) -> float:
    """Seconds to wait before retrying a 429: its Retry-After, capped, 1 s when absent."""
    value = parse_retry_after(response.headers.get("retry-after"))
    return min(MAX_RETRY_AFTER, 1.0 if value is None else value)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    # The API sends delta-seconds only (openapi: pattern ^[0-9]+$); an HTTP-date is not expected.
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def unwrap(response: httpx.Response) -> Any:
    """The answer's ``data``, or the typed error its status stands for."""
    if response.is_success:
        try:
            body = response.json()
        except ValueError as exc:
            raise VigilError(
                "the answer is not JSON", status=response.status_code, headers=response.headers
            ) from exc
        if not isinstance(body, dict) or "data" not in body:
            raise VigilError(
                "the answer has no data", status=response.status_code, headers=response.headers
            )
        return body["data"]
    message = response.reason_phrase or "request failed"
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            message = body["message"]
    except ValueError:
        pass
    raise error_for(
        response.status_code,
        message,
        response.headers,
        parse_retry_after(response.headers.get("retry-after")),
    )


def new_label(label: LabelKind, reason: Optional[str], note: Optional[str]) -> NewLabel:
    """The body of ``label_session``: members left out rather than sent as null."""
    body: NewLabel = {"label": label}
    if reason is not None:
        body["reason"] = reason
    if note is not None:
        body["note"] = note
    return body


def quality(data: Any) -> Quality:
    """``Quality`` with its ``[code, count]`` JSON pairs as the ``(code, count)`` tuples typed."""
    answer = dict(data)
    for key in ("falsePositiveReasons", "missedBotReasons"):
        answer[key] = [(str(code), int(count)) for code, count in answer.get(key) or []]
    return cast(Quality, answer)


def id_from_location(response: httpx.Response) -> str:
    """The last path segment of ``Location`` (how the API names what it created)."""
    location = str(response.headers.get("location", "")).rstrip("/")
    if "/" not in location:
        raise VigilError(
            "the answer names no Location", status=response.status_code, headers=response.headers
        )
    return location.rsplit("/", 1)[-1]


# --- rate limits ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RateLimitPolicy:
    """One named limit from ``RateLimit-Policy`` (q, w) and ``RateLimit`` (r, t)."""

    name: str
    limit: Optional[int] = None
    window: Optional[int] = None
    remaining: Optional[int] = None
    reset: Optional[int] = None


@dataclass(frozen=True)
class RateLimit:
    """The last answer's rate-limit fields (IETF httpapi draft), parsed, with the raw strings.

    ``limit``/``remaining``/``reset`` are those of the first policy the server lists (the
    per-second burst under Vigil's plans); ``policies`` has every one by name
    (``"burst"``, ``"monthly"``).
    """

    raw_policy: Optional[str]
    raw: Optional[str]
    policies: Dict[str, RateLimitPolicy] = field(default_factory=dict)

    def _first(self) -> Optional[RateLimitPolicy]:
        return next(iter(self.policies.values()), None)

    @property
    def policy(self) -> Optional[str]:
        first = self._first()
        return first.name if first else None

    @property
    def limit(self) -> Optional[int]:
        first = self._first()
        return first.limit if first else None

    @property
    def remaining(self) -> Optional[int]:
        first = self._first()
        return first.remaining if first else None

    @property
    def reset(self) -> Optional[int]:
        first = self._first()
        return first.reset if first else None


def _parse_items(header: Optional[str]) -> Dict[str, Dict[str, int]]:
    """``"burst";q=10;w=1, "monthly";q=100000;w=2592000`` -> {name: {param: int}}."""
    items: Dict[str, Dict[str, int]] = {}
    for item in (header or "").split(","):
        parts = [p.strip() for p in item.split(";")]
        name = parts[0].strip('"')
        if not name:
            continue
        params: Dict[str, int] = {}
        for part in parts[1:]:
            key, _, value = part.partition("=")
            try:
                params[key.strip()] = int(value.strip())
            except ValueError:
                continue  # a parameter this client does not know (or a malformed one)
        items[name] = params
    return items


def parse_rate_limit(headers: httpx.Headers) -> Optional[RateLimit]:
    raw_policy, raw = headers.get("ratelimit-policy"), headers.get("ratelimit")
    if raw_policy is None and raw is None:
        return None
    quotas, states = _parse_items(raw_policy), _parse_items(raw)
    policies = {
        name: RateLimitPolicy(
            name=name,
            limit=quotas.get(name, {}).get("q"),
            window=quotas.get(name, {}).get("w"),
            remaining=states.get(name, {}).get("r"),
            reset=states.get(name, {}).get("t"),
        )
        for name in list(quotas) + [n for n in states if n not in quotas]
    }
    return RateLimit(raw_policy=raw_policy, raw=raw, policies=policies)


# --- session tokens and webhooks (no network: static on both clients) ----------------------


def session_token(project_secret: str, session_id: str, ttl_seconds: int = 3600) -> str:
    """A token the browser agent sends with ``/v1/collect`` for this session.

    ``{expiry}.{hex HMAC-SHA256(project_secret, "vigil/{session_id}:{expiry}")}``: the SDK form,
    which needs only the project's ``apiKeyPrivate``, not its id (the server also accepts the
    older ``{projectId}:{sessionId}:{expiry}`` message).
    """
    if not project_secret:
        raise ValueError("project_secret (the project's apiKeyPrivate) is required")
    if not 0 < ttl_seconds <= MAX_TOKEN_TTL:
        raise ValueError(f"ttl_seconds must be between 1 and {MAX_TOKEN_TTL}")
    if len(session_id) > 128 or not ID_PATTERN.match(session_id):
        raise ValueError("session_id must be 1-128 letters, digits or _ . : - (not only dots)")
    expiry = int(time.time()) + int(ttl_seconds)
    message = f"vigil/{session_id}:{expiry}".encode()
    signature = hmac.new(project_secret.encode(), message, hashlib.sha256).hexdigest()
    return f"{expiry}.{signature}"


def verify_webhook(
    payload: Union[str, bytes], headers: Mapping[str, str], secret: str
) -> WebhookEvent:
    """Checks a delivery (Standard Webhooks) and returns its parsed body.

    ``secret`` is a webhook's ``whsec_...`` secret, or, for legacy deliveries, the project's
    ``apiKeyPrivate``, whose UTF-8 bytes are the HMAC key as they are (not base64). The
    ``standardwebhooks`` package takes ``bytes`` as a raw key, so both go through its
    constant-time comparison and its 5-minute timestamp tolerance.
    """
    if not secret:
        raise ValueError("a webhook secret is required")
    key: Union[str, bytes] = secret if secret.startswith("whsec_") else secret.encode()
    # The library looks headers up in lower case only; frameworks hand them in any case.
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        event = _StandardWebhook(key).verify(payload, lowered)
    except _StandardWebhookError as exc:
        raise WebhookVerificationError(str(exc)) from exc
    except ValueError as exc:
        # A malformed signature list, bad base64, non-UTF-8 or non-JSON body: all forgeries
        # as far as a receiver is concerned, and never a 500 in its handler.
        raise WebhookVerificationError(f"malformed delivery: {exc}") from exc
    if not isinstance(event, dict):
        raise WebhookVerificationError("the delivery's body is not a JSON object")
    return cast(WebhookEvent, event)  # the shape is documented, not validated
