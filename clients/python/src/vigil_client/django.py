"""Django integration: ``VigilMiddleware`` puts the visitor's session on ``request.vigil``.

Settings: ``VIGIL_API_KEY`` and ``VIGIL_PROJECT`` (required), ``VIGIL_BASE_URL``,
``VIGIL_PROJECT_SECRET`` and ``VIGIL_PUBLIC_KEY`` (both given: no API call at all),
``VIGIL_SESSION_COOKIE`` (default ``vigil_session``), ``VIGIL_TOKEN_TTL`` (seconds, 3600).
A template then renders ``request.vigil.public_key``, ``.session_id`` and ``.session_token``.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from ._base import session_token
from ._session import (
    DEFAULT_COOKIE,
    ProjectKeys,
    VigilSession,
    new_session_id,
    usable_session_id,
)
from ._sync import Vigil

__all__ = ["VigilMiddleware", "VigilSession"]


def _setting(name: str) -> Optional[str]:
    value = getattr(settings, name, None)
    return str(value) if value else None


class VigilMiddleware:
    """Reads or creates the session cookie and mints the session's token on every request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        project = _setting("VIGIL_PROJECT")
        if not project:
            raise ImproperlyConfigured("VigilMiddleware needs settings.VIGIL_PROJECT")
        self.project: str = project
        self.cookie = _setting("VIGIL_SESSION_COOKIE") or DEFAULT_COOKIE
        self.ttl_seconds = int(getattr(settings, "VIGIL_TOKEN_TTL", 3600))
        secret, public_key = _setting("VIGIL_PROJECT_SECRET"), _setting("VIGIL_PUBLIC_KEY")
        self._keys = ProjectKeys(public_key, secret) if secret and public_key else None
        self._lock = threading.Lock()

    def _project_keys(self) -> ProjectKeys:
        # Fetched on the first request, not at start-up, so `manage.py` commands and tests that
        # never render a page need no network; the lock keeps threaded servers to one fetch.
        with self._lock:
            if self._keys is None:
                api_key = _setting("VIGIL_API_KEY")
                if not api_key:
                    raise ImproperlyConfigured("VigilMiddleware needs settings.VIGIL_API_KEY")
                with Vigil(api_key=api_key, base_url=_setting("VIGIL_BASE_URL")) as vigil:
                    data = vigil.project(self.project)
                self._keys = ProjectKeys(
                    _setting("VIGIL_PUBLIC_KEY") or data["apiKeyPublic"],
                    _setting("VIGIL_PROJECT_SECRET") or data["apiKeyPrivate"],
                )
            return self._keys

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        keys = self._project_keys()
        session_id = request.COOKIES.get(self.cookie)
        is_new = session_id is None or not usable_session_id(session_id)
        if session_id is None or is_new:
            session_id = new_session_id()
        vigil_session = VigilSession(
            project_id=self.project,
            public_key=keys.public_key,
            session_id=session_id,
            session_token=session_token(keys.secret, session_id, self.ttl_seconds),
        )
        # setattr: HttpRequest declares no `vigil`, and a typed attribute would need a subclass.
        setattr(request, "vigil", vigil_session)
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
