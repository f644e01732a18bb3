"""FastAPI integration: a dependency giving each request its visitor's Vigil session.

    from fastapi import Depends, FastAPI
    from fastapi.responses import HTMLResponse
    from vigil_client import AsyncVigil
    from vigil_client.fastapi import VigilSession, session

    vigil = AsyncVigil()
    vigil_session = session(vigil, project="prj_demo")

    @app.get("/", response_class=HTMLResponse)
    async def page(s: VigilSession = Depends(vigil_session)) -> str: ...

The session cookie is set on the response FastAPI builds from what the route returns; a route
that returns a ``Response`` object itself must copy the cookie over (FastAPI's own rule for
dependencies that set headers).

How it fails is chosen: the project's keys are read once, within ``timeout`` (2 s), by one
request while concurrent ones wait for that read; without them, ``on_error`` decides. "open"
(the default) gives the route a session with ``available`` false (serve the page without the
agent); "closed" answers 503; a callable decides per request.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Awaitable, Callable, Optional, Union

import httpx
from fastapi import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ._async import AsyncVigil
from ._base import MAX_TOKEN_TTL, seg, session_token
from ._keys import DEFAULT_RETRY_INTERVAL, DEFAULT_TIMEOUT, AsyncKeys, in_thread
from ._session import (
    DEFAULT_COOKIE,
    ProjectKeys,
    VigilSession,
    new_session_id,
    usable_session_id,
)
from ._sync import Vigil

__all__ = ["VigilSession", "VigilUnavailable", "session", "unavailable_as_message"]

#: What a fail-closed request is told. Not the error's text: it may name internal addresses.
UNAVAILABLE_MESSAGE = "Bot protection is unavailable for the moment; please try again shortly."

#: ``on_error`` as a callable: ``(request, error)``; raise (an ``HTTPException``) to refuse the
#: request, return to let it through with an unavailable session. May be a coroutine function.
ErrorHandler = Callable[[Request, Exception], Union[None, Awaitable[None]]]


class VigilUnavailable(HTTPException):
    """The 503 of ``on_error="closed"``: FastAPI answers it as ``{"detail": message}``.

    ``app.add_exception_handler(VigilUnavailable, unavailable_as_message)`` answers
    ``{"message": message}`` instead (the shape of the API's and the Django middleware's errors).
    """

    def __init__(self, error: Exception, retry_after: int) -> None:
        super().__init__(
            status_code=503,
            detail=UNAVAILABLE_MESSAGE,
            headers={"Retry-After": str(retry_after), "Cache-Control": "no-store"},
        )
        self.error = error


async def unavailable_as_message(request: Request, exc: Exception) -> Response:
    """An exception handler answering :class:`VigilUnavailable` as ``{"message": ...}``."""
    from starlette.responses import JSONResponse

    if isinstance(exc, HTTPException):
        return JSONResponse({"message": exc.detail}, status_code=exc.status_code, headers=exc.headers)
    raise exc


def _check_on_error(on_error: object) -> None:
    if on_error not in ("open", "closed") and not callable(on_error):
        raise ValueError(
            f'on_error must be "open", "closed" or a callable (request, error), not {on_error!r}'
        )


def session(
    vigil: Union[Vigil, AsyncVigil],
    *,
    project: str,
    project_secret: Optional[str] = None,
    public_key: Optional[str] = None,
    cookie: str = DEFAULT_COOKIE,
    ttl_seconds: int = 3600,
    timeout: float = DEFAULT_TIMEOUT,
    retry_interval: float = DEFAULT_RETRY_INTERVAL,
    on_error: Union[str, ErrorHandler] = "open",
) -> Callable[[Request, Response], Awaitable[VigilSession]]:
    """A dependency (``Depends(session(...))``) returning the request's :class:`VigilSession`.

    The session id comes from the ``cookie`` (HttpOnly, SameSite=Lax, Secure over https),
    made and set when absent. The project's keys come from ``project_secret``/``public_key``
    when both are given (no API call at all), else from the API on first use, then cached for
    the app's life (a rotated key needs a restart, as any configured secret does).

    The read is bounded by ``timeout`` seconds (no 429 retry) and shared by concurrent requests;
    a failure is kept ``retry_interval`` seconds, then one request reads again. Without the
    keys, ``on_error`` decides: ``"open"`` (default) returns a session with ``available`` false
    and ``error`` set; ``"closed"`` raises :class:`VigilUnavailable` (503, ``Retry-After``); a
    callable ``(request, error)`` may raise to refuse or return to go on as open.
    """
    if not isinstance(project, str) or not project:
        raise ValueError("project (the project's id) is required")
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int):
        raise ValueError(f"ttl_seconds must be an integer from 1 to {MAX_TOKEN_TTL}")
    if not 0 < ttl_seconds <= MAX_TOKEN_TTL:
        raise ValueError(f"ttl_seconds must be an integer from 1 to {MAX_TOKEN_TTL}")
    _check_on_error(on_error)
    path = f"/projects/{seg(project)}"

    def keys_of(data: Any) -> ProjectKeys:
        return ProjectKeys(public_key or data["apiKeyPublic"], project_secret or data["apiKeyPrivate"])

    async def fetch() -> ProjectKeys:
        # One try, under the deadline: a 429's Retry-After is not waited out on a page.
        limit = httpx.Timeout(timeout)
        if isinstance(vigil, AsyncVigil):
            return keys_of(await vigil._call("GET", path, timeout=limit, max_retries=0))
        sync = vigil
        # The sync client blocks: in a worker thread, left behind if the deadline passes first.
        return keys_of(
            await in_thread(lambda: sync._call("GET", path, timeout=limit, max_retries=0))
        )

    loader = AsyncKeys(fetch, timeout=timeout, retry_interval=retry_interval)  # checks both
    retry_after = max(1, math.ceil(retry_interval))
    given: Optional[ProjectKeys] = (
        ProjectKeys(public_key, project_secret) if public_key and project_secret else None
    )

    async def dependency(request: Request, response: Response) -> VigilSession:
        session_id = request.cookies.get(cookie)
        if session_id is None or not usable_session_id(session_id):
            session_id = new_session_id()
            response.set_cookie(
                cookie,
                session_id,
                httponly=True,  # the page needs the token, never the cookie itself
                samesite="lax",
                secure=request.url.scheme == "https",
                path="/",
            )
        outcome = given or await loader.get()
        if isinstance(outcome, ProjectKeys):
            try:
                token = session_token(outcome.secret, session_id, ttl_seconds)
            except ValueError as exc:
                outcome = exc
            else:
                return VigilSession(
                    project_id=project,
                    public_key=outcome.public_key,
                    session_id=session_id,
                    session_token=token,
                )
        error: Exception = outcome
        if on_error == "closed":
            raise VigilUnavailable(error, retry_after)
        if callable(on_error):
            result = on_error(request, error)
            if inspect.isawaitable(result):
                await result
        return VigilSession(
            project_id=project,
            public_key=None,
            session_id=session_id,
            session_token=None,
            error=error,
        )

    return dependency
