"""Django integration: ``VigilMiddleware`` puts the visitor's session on ``request.vigil``.

Settings: ``VIGIL_API_KEY`` and ``VIGIL_PROJECT`` (required), ``VIGIL_BASE_URL``,
``VIGIL_PROJECT_SECRET`` and ``VIGIL_PUBLIC_KEY`` (both given: no API call at all),
``VIGIL_SESSION_COOKIE`` (default ``vigil_session``), ``VIGIL_TOKEN_TTL`` (seconds, 3600),
``VIGIL_TIMEOUT`` (seconds a request waits for the project's keys at most, 2.0),
``VIGIL_RETRY_INTERVAL`` (seconds a failed read is kept, 1.0) and ``VIGIL_ON_ERROR``:

- ``"open"`` (default): the request goes on with ``request.vigil.available`` false (no public
  key, no token; ``request.vigil.error`` says why): serve the page without the agent;
- ``"closed"``: a 503 ``{"message": ...}`` with ``Retry-After``; the view does not run;
- a callable ``(request, error)`` (or its dotted path) returning a response to answer with, or
  ``None`` to go on as open.

A template then renders ``request.vigil.public_key``, ``.session_id`` and ``.session_token``
(inside ``{% if request.vigil.available %}``).

The keys are read once, in a thread of its own; concurrent requests wait for that one read (no
lock is held while they wait), and none waits past ``VIGIL_TIMEOUT``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Optional, Union

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.module_loading import import_string

from ._base import MAX_TOKEN_TTL, resolve_base_url, seg, session_token
from ._keys import DEFAULT_RETRY_INTERVAL, DEFAULT_TIMEOUT, ThreadedKeys, check_timing
from ._session import (
    DEFAULT_COOKIE,
    ProjectKeys,
    VigilSession,
    new_session_id,
    usable_session_id,
)
from ._sync import Vigil

__all__ = ["VigilMiddleware", "VigilSession"]

#: What a fail-closed request is told. Not the error's text: it may name internal addresses.
UNAVAILABLE_MESSAGE = "Bot protection is unavailable for the moment; please try again shortly."

ErrorHandler = Callable[[HttpRequest, Exception], Optional[HttpResponseBase]]


def _setting(name: str) -> Optional[str]:
    value = getattr(settings, name, None)
    return str(value) if value else None


def _seconds(name: str, default: float) -> float:
    value = getattr(settings, name, None)
    if value is None:
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ImproperlyConfigured(f"settings.{name} must be a number of seconds") from None


def _on_error() -> Union[str, ErrorHandler]:
    value: Any = getattr(settings, "VIGIL_ON_ERROR", None) or "open"
    if value in ("open", "closed"):
        return str(value)
    if isinstance(value, str):
        try:
            value = import_string(value)
        except ImportError as exc:
            raise ImproperlyConfigured(
                f'settings.VIGIL_ON_ERROR must be "open", "closed", a callable or its dotted path: {exc}'
            ) from exc
    if not callable(value):
        raise ImproperlyConfigured(
            'settings.VIGIL_ON_ERROR must be "open", "closed", a callable or its dotted path'
        )
    handler: ErrorHandler = value
    return handler


class VigilMiddleware:
    """Reads or creates the session cookie and mints the session's token on every request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        project = _setting("VIGIL_PROJECT")
        if not project:
            raise ImproperlyConfigured("VigilMiddleware needs settings.VIGIL_PROJECT")
        self.project: str = project
        self.cookie = _setting("VIGIL_SESSION_COOKIE") or DEFAULT_COOKIE
        try:
            self.ttl_seconds = int(getattr(settings, "VIGIL_TOKEN_TTL", 3600))
        except (TypeError, ValueError):
            raise ImproperlyConfigured("settings.VIGIL_TOKEN_TTL must be seconds") from None
        if not 0 < self.ttl_seconds <= MAX_TOKEN_TTL:
            raise ImproperlyConfigured(f"settings.VIGIL_TOKEN_TTL must be 1 to {MAX_TOKEN_TTL}")
        self.timeout = _seconds("VIGIL_TIMEOUT", DEFAULT_TIMEOUT)
        self.retry_interval = _seconds("VIGIL_RETRY_INTERVAL", DEFAULT_RETRY_INTERVAL)
        try:
            check_timing(self.timeout, self.retry_interval)
        except ValueError as exc:
            raise ImproperlyConfigured(f"settings.VIGIL_TIMEOUT/VIGIL_RETRY_INTERVAL: {exc}") from exc
        self.on_error = _on_error()
        self.retry_after = max(1, math.ceil(self.retry_interval))

        secret, public_key = _setting("VIGIL_PROJECT_SECRET"), _setting("VIGIL_PUBLIC_KEY")
        self._secret, self._public_key = secret, public_key
        self._given = ProjectKeys(public_key, secret) if secret and public_key else None
        self._api_key = _setting("VIGIL_API_KEY")
        try:
            self._base_url = resolve_base_url(_setting("VIGIL_BASE_URL"))
        except ValueError as exc:
            raise ImproperlyConfigured(f"settings.VIGIL_BASE_URL: {exc}") from exc
        if self._given is None and not self._api_key:
            raise ImproperlyConfigured(
                "VigilMiddleware needs settings.VIGIL_API_KEY (or both VIGIL_PROJECT_SECRET "
                "and VIGIL_PUBLIC_KEY)"
            )
        # Read on the first request, not at start-up, so `manage.py` commands and tests that
        # never render a page need no network.
        self._keys = ThreadedKeys(
            self._fetch_keys, timeout=self.timeout, retry_interval=self.retry_interval
        )

    def _fetch_keys(self) -> ProjectKeys:
        # One try (a 429's Retry-After is not waited out on a page), bounded by the timeout.
        with Vigil(
            api_key=self._api_key, base_url=self._base_url, timeout=self.timeout, max_retries=0
        ) as vigil:
            data = vigil._call("GET", f"/projects/{seg(self.project)}")
        return ProjectKeys(
            self._public_key or data["apiKeyPublic"], self._secret or data["apiKeyPrivate"]
        )

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        session_id = request.COOKIES.get(self.cookie)
        is_new = session_id is None or not usable_session_id(session_id)
        if session_id is None or is_new:
            session_id = new_session_id()
        outcome = self._given or self._keys.get()
        vigil_session: VigilSession
        if isinstance(outcome, ProjectKeys):
            vigil_session = VigilSession(
                project_id=self.project,
                public_key=outcome.public_key,
                session_id=session_id,
                session_token=session_token(outcome.secret, session_id, self.ttl_seconds),
            )
        else:
            vigil_session = VigilSession(
                project_id=self.project,
                public_key=None,
                session_id=session_id,
                session_token=None,
                error=outcome,
            )
        # setattr: HttpRequest declares no `vigil`, and a typed attribute would need a subclass.
        setattr(request, "vigil", vigil_session)
        if vigil_session.error is not None:
            refusal = self._refusal(request, vigil_session.error)
            if refusal is not None:
                return refusal
        response = self.get_response(request)
        if is_new:
            response.set_cookie(
                self.cookie,
                session_id,
                httponly=True,
                samesite="Lax",
                secure=request.is_secure(),
            )
        return response

    def _refusal(self, request: HttpRequest, error: Exception) -> Optional[HttpResponseBase]:
        """The answer instead of the view, or None to go on (fail open)."""
        if self.on_error == "open":
            return None
        if self.on_error == "closed":
            response = HttpResponse(
                json.dumps({"message": UNAVAILABLE_MESSAGE}),
                status=503,
                content_type="application/json",
            )
            response["Retry-After"] = str(self.retry_after)
            response["Cache-Control"] = "no-store"
            return response
        assert callable(self.on_error)
        return self.on_error(request, error)
