"""The visitor session the framework helpers hand to a page: id, token and the project's keys."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Optional

from ._base import ID_PATTERN

DEFAULT_COOKIE = "vigil_session"


@dataclass(frozen=True)
class VigilSession:
    """What a page template needs for ``Vigil.collect({publicKey, sessionId, sessionToken})``.

    When the project's keys could not be read (Vigil stopped, slow or refusing) and the helper
    fails open, ``available`` is false: ``public_key`` and ``session_token`` are ``None`` and
    ``error`` says why; the page is served without the agent. ``session_id`` is the visitor's
    all the same.
    """

    project_id: str
    public_key: Optional[str]
    session_id: str
    session_token: Optional[str]
    error: Optional[Exception] = None

    @property
    def available(self) -> bool:
        """Whether the keys were read and the token minted (render the agent only then)."""
        return self.error is None and self.public_key is not None and self.session_token is not None


def new_session_id() -> str:
    # 128 random bits: unguessable, so nobody can post visits into another visitor's session.
    return "sess_" + secrets.token_urlsafe(16)


def usable_session_id(value: Optional[str]) -> bool:
    """Whether a cookie's value can be reused as a session id (else a new one is made)."""
    return value is not None and len(value) <= 128 and ID_PATTERN.match(value) is not None


@dataclass(frozen=True)
class ProjectKeys:
    public_key: str
    secret: str
