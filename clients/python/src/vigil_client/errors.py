"""Typed errors: one class per way a call can fail that a caller would handle differently."""

from __future__ import annotations

from typing import Dict, Literal, Mapping, Optional, Type

from standardwebhooks.webhooks import WebhookVerificationError as _StandardWebhookError


class VigilError(Exception):
    """An answer that was not a success, or no answer at all.

    ``status`` is the HTTP status (None when no answer came), ``message`` the API's
    ``{"message"}`` (or a description of the failure), ``headers`` the answer's headers.
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message if status is None else f"{status}: {message}")
        self.message = message
        self.status = status
        self.headers: Dict[str, str] = dict(headers or {})


class AuthenticationError(VigilError):
    """401: the developer key is missing, malformed or unknown."""


class ForbiddenError(VigilError):
    """403: the plan is not in force, the project limit is reached or the project is disabled."""


class NotFoundError(VigilError):
    """404: the project (or another account's), session, webhook or event does not exist."""


class ValidationError(VigilError):
    """400, 413, 415 or 422: the request itself is wrong; the message says how."""


class ConflictError(VigilError):
    """409: the project already has this webhook, or 10 webhooks."""


class RateLimitError(VigilError):
    """429 after the retries: ``retry_after`` is the server's ``Retry-After`` in seconds."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        headers: Optional[Mapping[str, str]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message, status=status, headers=headers)
        self.retry_after = retry_after


class VigilConnectionError(VigilError):
    """No answer: the connection failed or broke (``status`` is None)."""


class VigilTimeoutError(VigilConnectionError):
    """No answer within the client's timeout."""


class WebhookVerificationError(_StandardWebhookError):
    """A delivery whose signature, timestamp or headers do not verify.

    A subclass of ``standardwebhooks``' own error, so code catching that one catches this too.
    """


SealedVerdictRefusal = Literal[
    "malformed", "unsupported", "unknown_key", "forged", "expired", "mismatch"
]


class SealedVerdictError(Exception):
    """A sealed verdict this backend must not trust; ``reason`` says why.

    ``"malformed"`` (not a compact JWE), ``"unsupported"`` (another ``alg``/``enc``, or a
    ``crit``/``zip`` header), ``"unknown_key"`` (no key of the given set has its ``kid``),
    ``"forged"`` (fails authentication: changed, or sealed under another key), ``"expired"``
    (``exp`` has passed), ``"mismatch"`` (a claim differs from what ``expect`` names).
    Not a :class:`VigilError`: no request was made.
    """

    def __init__(self, message: str, *, reason: SealedVerdictRefusal) -> None:
        super().__init__(message)
        self.message = message
        self.reason: SealedVerdictRefusal = reason


_BY_STATUS: Dict[int, Type[VigilError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    415: ValidationError,
    422: ValidationError,
}


def error_for(
    status: int, message: str, headers: Mapping[str, str], retry_after: Optional[float]
) -> VigilError:
    """The most specific error for an answer's status."""
    if status == 429:
        return RateLimitError(message, status=status, headers=headers, retry_after=retry_after)
    return _BY_STATUS.get(status, VigilError)(message, status=status, headers=headers)
