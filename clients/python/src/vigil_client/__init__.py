"""Python client for the Vigil bot and proxy/VPN detection API (v1).

    from vigil_client import Vigil
    vigil = Vigil(api_key="vgl_live_...", base_url="https://vigil.example")
    vigil.session_score("prj_1", "sess_1")
"""

from ._async import AsyncVigil
from ._base import RateLimit, RateLimitPolicy
from ._session import VigilSession
from ._sync import Vigil
from ._version import __version__
from .errors import (
    AuthenticationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitError,
    SealedVerdictError,
    ValidationError,
    VigilConnectionError,
    VigilError,
    VigilTimeoutError,
    WebhookVerificationError,
)

__all__ = [
    "AsyncVigil",
    "AuthenticationError",
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "RateLimit",
    "RateLimitError",
    "RateLimitPolicy",
    "SealedVerdictError",
    "ValidationError",
    "Vigil",
    "VigilConnectionError",
    "VigilError",
    "VigilSession",
    "VigilTimeoutError",
    "WebhookVerificationError",
    "__version__",
]
