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
"""

from __future__ import annotations

from typing import Awaitable, Callable, Optional, Union

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ._async import AsyncVigil
from ._base import session_token
from ._session import (
    DEFAULT_COOKIE,
    ProjectKeys,
    VigilSession,
    new_session_id,
    usable_session_id,
)
from ._sync import Vigil

__all__ = ["VigilSession", "session"]


def session(
    vigil: Union[Vigil, AsyncVigil],
    *,
    project: str,
    project_secret: Optional[str] = None,
    public_key: Optional[str] = None,
    cookie: str = DEFAULT_COOKIE,
    ttl_seconds: int = 3600,
) -> Callable[[Request, Response], Awaitable[VigilSession]]:
    """A dependency (``Depends(session(...))``) returning the request's :class:`VigilSession`.

    The session id comes from the ``cookie`` (HttpOnly, SameSite=Lax, Secure over https),
    made and set when absent. The project's keys come from ``project_secret``/``public_key``
    when given, else from ``vigil.project(project)`` on first use, then cached for the app's
    life (a rotated key needs a restart, as any configured secret does).
    """
    keys: Optional[ProjectKeys] = (
        ProjectKeys(public_key, project_secret) if public_key and project_secret else None
    )

    async def load_keys() -> ProjectKeys:
        nonlocal keys
        if keys is None:
            # No lock: two first requests racing both fetch the same keys, which is harmless.
            if isinstance(vigil, AsyncVigil):
                data = await vigil.project(project)
            else:
                # The sync client blocks; keep it off the event loop.
                data = await run_in_threadpool(vigil.project, project)
            keys = ProjectKeys(
                public_key or data["apiKeyPublic"], project_secret or data["apiKeyPrivate"]
            )
        return keys

    async def dependency(request: Request, response: Response) -> VigilSession:
        project_keys = await load_keys()
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
        return VigilSession(
            project_id=project,
            public_key=project_keys.public_key,
            session_id=session_id,
            session_token=session_token(project_keys.secret, session_id, ttl_seconds),
        )

    return dependency
