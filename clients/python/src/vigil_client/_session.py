"""The visitor session the framework helpers hand to a page: id, token and the project's keys."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Optional

from ._base import ID_PATTERN

DEFAULT_COOKIE = "vigil_session"


@dataclass(frozen=True)
class VigilSession:
    """What a page template needs for ``Vigil.collect({publicKey, sessionId, sessionToken})``."""

    project_id: str
    public_key: str
    session_id: str
    session_token: str


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
