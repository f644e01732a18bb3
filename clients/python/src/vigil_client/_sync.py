"""The blocking client, on ``httpx.Client``."""

from __future__ import annotations

import time
from datetime import datetime
from types import TracebackType
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Type,
    TypeVar,
    Union,
    cast,
    overload,
)

import httpx

from . import _base, _sealed
from ._base import Params, RateLimit, drop_none, seg
from .errors import SealedVerdictError, VigilConnectionError, VigilError, VigilTimeoutError
from .types import (
    AgentStatus,
    Delivery,
    Event,
    Granularity,
    Label,
    LabelKind,
    NewEvent,
    Plan,
    Project,
    ProjectChanges,
    Quality,
    Result,
    SealedVerdict,
    SealingKeys,
    SessionScore,
    SessionSummary,
    StatsBucket,
    Usage,
    Webhook,
    WebhookType,
)

T = TypeVar("T")


class Vigil:
    """A Vigil API client for a backend, holding a developer key.

    ``base_url`` is the API's origin (``https://vigil.example``); a trailing ``/v1`` (the API
    reference's base) is dropped, and a URL that is not http(s) is a ``ValueError``. It defaults to
    ``$VIGIL_BASE_URL``, then ``http://127.0.0.1:3000``. A 429 is retried up to ``max_retries``
    times after its ``Retry-After`` (at most 30 s). ``rate_limit`` holds the last answer's
    rate-limit fields. Use it as a context manager, or call ``close()``.
    """

    session_token = staticmethod(_base.session_token)
    verify_webhook = staticmethod(_base.verify_webhook)
    open_sealed = staticmethod(_sealed.open_sealed)

    def __init__(
        self,
        api_key: Optional[str] = None,
        *,
        base_url: Optional[str] = None,
        max_retries: int = 2,
        timeout: Union[float, httpx.Timeout] = _base.DEFAULT_TIMEOUT,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self.base_url = _base.resolve_base_url(base_url)
        self.max_retries = max_retries
        self.rate_limit: Optional[RateLimit] = None
        self._headers = _base.default_headers(_base.resolve_api_key(api_key))
        # A caller's own client (proxies, mTLS, transports in tests) stays the caller's to close.
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._timeout = timeout
        #: ``open_project_sealed`` refetches keys for an unknown kid at most this often (seconds).
        self.sealing_key_refetch_interval = _sealed.DEFAULT_REFETCH_INTERVAL
        self._sealing_keys: Dict[str, _sealed.CachedKeys] = {}

    # --- lifecycle ---

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "Vigil":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    # --- transport ---

    def _send(
        self,
        method: str,
        url: str,
        *,
        params: Optional[Params] = None,
        json: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Union[float, httpx.Timeout, None] = None,
        max_retries: Optional[int] = None,
        deadline: Optional[float] = None,
    ) -> httpx.Response:
        # `deadline` (time.monotonic()): no attempt or 429 wait starts that would end past it.
        retries = self.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise VigilTimeoutError(f"no answer from {self.base_url} in time")
                timeout = httpx.Timeout(left)
            try:
                response = self._http.request(
                    method,
                    url,
                    params=params,
                    json=json,
                    headers={**self._headers, **(headers or {})},
                    timeout=self._timeout if timeout is None else timeout,
                )
            except httpx.TimeoutException as exc:
                raise VigilTimeoutError(f"no answer from {self.base_url} in time") from exc
            except httpx.TransportError as exc:
                raise VigilConnectionError(f"cannot reach {self.base_url}: {exc}") from exc
            self.rate_limit = _base.parse_rate_limit(response.headers) or self.rate_limit
            # Only 429 is retried: it is never processed, so even a POST is safe to repeat.
            if response.status_code == 429 and attempt < retries and (
                deadline is None or time.monotonic() + _base.retry_delay(response) < deadline
            ):
                attempt += 1
                time.sleep(_base.retry_delay(response))
                continue
            return response

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return _base.unwrap(self._send(method, f"{self.base_url}/v1{path}", **kwargs))

    def _pages(self, path: str, params: Params) -> Iterator[Any]:
        url: Optional[str] = f"{self.base_url}/v1{path}"
        query: Optional[Params] = params
        while url is not None:
            response = self._send("GET", url, params=query)
            yield from _base.unwrap(response) or []  # results answer null for "none"
            link = _base.next_link(response.headers.get("link"))
            # The Link target already carries the cursor and limit: follow it as given.
            url, query = (str(response.url.join(link)), None) if link else (None, None)

    # --- account ---

    def plan(self) -> Plan:
        """The account's plan."""
        return cast(Plan, self._call("GET", "/plan"))

    def usage(self) -> Usage:
        """Requests counted in the current billing period."""
        return cast(Usage, self._call("GET", "/usage"))

    # --- projects ---

    def projects(self) -> List[Project]:
        """Every project of the account, oldest first."""
        return cast(List[Project], self._call("GET", "/projects"))

    def project(self, project_id: str) -> Project:
        return cast(Project, self._call("GET", f"/projects/{seg(project_id)}"))

    def create_project(
        self,
        name: str,
        domain: str,
        *,
        require_session_token: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
    ) -> Project:
        """Creates a project (up to the plan's ``maxProjects``); the answer holds its keys."""
        body: Dict[str, Any] = {"name": name, "domain": domain}
        if require_session_token is not None:
            body["requireSessionToken"] = require_session_token
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return cast(Project, self._call("POST", "/projects", json=body, headers=headers))

    def update_project(self, project_id: str, changes: ProjectChanges) -> Project:
        """Changes a project (name, domain, disabled, requireSessionToken, ...)."""
        return cast(
            Project, self._call("PATCH", f"/projects/{seg(project_id)}", json=dict(changes))
        )

    # --- sealed verdicts ---

    def sealing_key(self, project_id: str) -> SealingKeys:
        """Whether the project seals, and the JWKs that open its verdicts (current first)."""
        path = f"/projects/{seg(project_id)}/sealing-key"
        keys = cast(SealingKeys, self._call("GET", path))
        self._sealing_keys[project_id] = _sealed.CachedKeys(keys)
        return keys

    def rotate_sealing_key(self, project_id: str) -> SealingKeys:
        """A new key seals from now on; the replaced one stays listed for the overlap."""
        path = f"/projects/{seg(project_id)}/sealing-key/rotate"
        keys = cast(SealingKeys, self._call("POST", path))
        self._sealing_keys[project_id] = _sealed.CachedKeys(keys)
        return keys

    def open_project_sealed(
        self,
        project_id: str,
        sealed: str,
        expect: Mapping[str, Any],
        *,
        timeout: float = _sealed.DEFAULT_KEYS_TIMEOUT,
    ) -> SealedVerdict:
        """``open_sealed`` with the project's keys, fetched once and cached on this client.

        ``expect`` names at least the visitor's ``sessionId`` (add ``origin``); ``projectId`` is
        ``project_id``, expected too. Without the session: a ``TypeError``, before any call. A
        verdict under a kid the cache lacks (a rotation since) refetches the keys once, at
        most every ``sealing_key_refetch_interval`` seconds. Raises ``SealedVerdictError``, or
        a ``VigilError`` if the keys cannot be fetched: a read waits at most ``timeout``
        seconds (2; a 429 is retried only if its wait fits), so a checkout decides in seconds.
        """
        checks = _sealed.project_expectations(project_id, expect)  # before any call
        cached = self._sealing_keys.get(project_id)
        if cached is None:
            return _sealed.open_sealed(
                sealed, self._read_sealing_keys(project_id, timeout), expect=checks
            )
        try:
            return _sealed.open_sealed(sealed, cached.keys, expect=checks)
        except SealedVerdictError as exc:
            if not _sealed.worth_refetching(
                exc, sealed, cached, self.sealing_key_refetch_interval
            ):
                raise
        keys = self._read_sealing_keys(project_id, timeout)
        return _sealed.open_sealed(sealed, keys, expect=checks)

    def _read_sealing_keys(self, project_id: str, timeout: float) -> SealingKeys:
        """The project's keys for a request path: within ``timeout`` seconds in all (a 429 is
        retried only if its wait fits), then cached."""
        path = f"/projects/{seg(project_id)}/sealing-key"
        deadline = time.monotonic() + timeout
        keys = cast(SealingKeys, self._call("GET", path, deadline=deadline))
        self._sealing_keys[project_id] = _sealed.CachedKeys(keys)
        return keys

    # --- events, results, sessions ---

    def create_event(
        self,
        project_id: str,
        session_id: str,
        evidence: NewEvent,
        idempotency_key: Optional[str] = None,
    ) -> Event:
        """Evaluates a visit the backend saw (``{"ipAddress", "userAgent", ...}``) and stores it."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/events"
        return cast(Event, self._call("POST", path, json=dict(evidence), headers=headers))

    def events(
        self, project_id: str, session_id: str, *, limit: Optional[int] = None
    ) -> Iterator[Event]:
        """Every event of the session, newest first, page after page."""
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/events"
        return cast(Iterator[Event], self._pages(path, drop_none({"limit": limit})))

    def event(self, project_id: str, session_id: str, event_id: str) -> Event:
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/events/{seg(event_id)}"
        return cast(Event, self._call("GET", path))

    def results(
        self, project_id: str, session_id: str, *, limit: Optional[int] = None
    ) -> Iterator[Result]:
        """Every result of the session, newest first, following ``Link`` across pages."""
        path = f"/results/{seg(project_id)}/{seg(session_id)}"
        return cast(Iterator[Result], self._pages(path, drop_none({"limit": limit})))

    def session_score(self, project_id: str, session_id: str) -> SessionScore:
        """The session's overall scores (the maxima over its results); 404 if it has none."""
        path = f"/results/{seg(project_id)}/{seg(session_id)}/general"
        return cast(SessionScore, self._call("GET", path))

    @overload
    def verdict(
        self, project_id: str, session_id: str, *, timeout: float = 1.5
    ) -> Optional[SessionScore]: ...

    @overload
    def verdict(
        self, project_id: str, session_id: str, *, timeout: float = 1.5, fallback: T
    ) -> Union[SessionScore, T]: ...

    def verdict(
        self,
        project_id: str,
        session_id: str,
        *,
        timeout: float = 1.5,
        fallback: Any = None,
    ) -> Any:
        """The session's score for a decision in a request path, or ``fallback``.

        One try, no 429 retry: a page waiting on it must not wait for a Retry-After. Any
        failure (timeout, unknown session, rate limit, outage) gives ``fallback``, so the
        caller decides whether to fail open or closed. A blocking call cannot be cut short
        portably, so httpx bounds each phase (connect, write, read) by ``timeout`` and an answer
        arriving after the deadline is discarded as late: the decision never rests on it.
        """
        path = f"/results/{seg(project_id)}/{seg(session_id)}/general"
        deadline = time.monotonic() + timeout
        try:
            score = self._call("GET", path, timeout=httpx.Timeout(timeout), max_retries=0)
        except VigilError:
            return fallback
        return score if time.monotonic() <= deadline else fallback

    def sessions(
        self,
        project_id: str,
        *,
        limit: Optional[int] = None,
        min_score_bot: Optional[float] = None,
        min_score_proxy_vpn: Optional[float] = None,
        agent: Optional[AgentStatus] = None,
    ) -> Iterator[SessionSummary]:
        """The project's sessions, most recent activity first, across pages."""
        params = drop_none(
            {
                "limit": limit,
                "minScoreBot": min_score_bot,
                "minScoreProxyVpn": min_score_proxy_vpn,
                "agent": agent,
            }
        )
        path = f"/projects/{seg(project_id)}/sessions"
        return cast(Iterator[SessionSummary], self._pages(path, params))

    def device_sessions(
        self,
        project_id: str,
        device: str,
        *,
        limit: Optional[int] = None,
        min_score_bot: Optional[float] = None,
        min_score_proxy_vpn: Optional[float] = None,
    ) -> Iterator[SessionSummary]:
        """The sessions of one device key (an event's ``device``), across pages."""
        params = drop_none(
            {"limit": limit, "minScoreBot": min_score_bot, "minScoreProxyVpn": min_score_proxy_vpn}
        )
        path = f"/projects/{seg(project_id)}/devices/{seg(device)}/sessions"
        return cast(Iterator[SessionSummary], self._pages(path, params))

    def stats(
        self,
        project_id: str,
        *,
        granularity: Optional[Granularity] = None,
        from_: Union[str, datetime, None] = None,
        to: Union[str, datetime, None] = None,
    ) -> List[StatsBucket]:
        """Visits, bots, proxies and reasons per hour or day (``from_``: ``from`` is reserved)."""
        params = drop_none(
            {
                "granularity": granularity,
                "from": None if from_ is None else _base.timestamp_param(from_),
                "to": None if to is None else _base.timestamp_param(to),
            }
        )
        path = f"/projects/{seg(project_id)}/stats"
        return cast(List[StatsBucket], self._call("GET", path, params=params))

    # --- labels ---

    def label_session(
        self,
        project_id: str,
        session_id: str,
        label: LabelKind,
        *,
        reason: Optional[str] = None,
        note: Optional[str] = None,
    ) -> Label:
        """Labels a session ``"bot"`` or ``"human"``, replacing its label if it had one.

        ``reason`` is your own code (``^[a-z][a-z0-9_]{0,63}$``: ``chargeback``), ``note`` up to
        500 characters. The session must have events in the project (``NotFoundError``).
        """
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/label"
        body = dict(_base.new_label(label, reason, note))
        return cast(Label, self._call("PUT", path, json=body))

    def label(self, project_id: str, session_id: str) -> Label:
        """The session's label (``NotFoundError`` if it has none)."""
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/label"
        return cast(Label, self._call("GET", path))

    def unlabel_session(self, project_id: str, session_id: str) -> None:
        """Withdraws the session's label (``NotFoundError`` if it has none)."""
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/label"
        self._call("DELETE", path)

    def labels(self, project_id: str, *, limit: Optional[int] = None) -> Iterator[Label]:
        """Every label of the project, by session id, page after page."""
        params = drop_none({"limit": limit})
        path = f"/projects/{seg(project_id)}/labels"
        return cast(Iterator[Label], self._pages(path, params))

    def quality(
        self,
        project_id: str,
        *,
        from_: Union[str, datetime, None] = None,
        to: Union[str, datetime, None] = None,
    ) -> Quality:
        """How right the engine was on the labels given in ``[from_, to)`` (default: 30 days).

        Precision, recall, and the reasons most often on people flagged as bots and on bots
        that were not (``(code, sessions)`` tuples).
        """
        params = drop_none(
            {
                "from": None if from_ is None else _base.timestamp_param(from_),
                "to": None if to is None else _base.timestamp_param(to),
            }
        )
        path = f"/projects/{seg(project_id)}/quality"
        return _base.quality(self._call("GET", path, params=params))

    # --- webhooks ---

    def create_webhook(self, project_id: str, type: WebhookType, url: str) -> str:
        """Registers a webhook and returns its id (the answer is `data: null` and a Location)."""
        path = f"/projects/{seg(project_id)}/webhooks"
        response = self._send("POST", f"{self.base_url}/v1{path}", json={"type": type, "url": url})
        _base.unwrap(response)
        return _base.id_from_location(response)

    def webhooks(self, project_id: str) -> List[Webhook]:
        return cast(List[Webhook], self._call("GET", f"/projects/{seg(project_id)}/webhooks"))

    def delete_webhook(self, project_id: str, webhook_id: str) -> None:
        self._call("DELETE", f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}")

    def webhook_secret(self, project_id: str, webhook_id: str) -> Optional[str]:
        """The ``whsec_...`` secret deliveries are signed with; None for a legacy webhook."""
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/secret"
        return cast(Optional[str], self._call("GET", path)["secret"])

    def rotate_webhook_secret(self, project_id: str, webhook_id: str) -> str:
        """A new secret; the previous one keeps signing during the overlap (24 h by default)."""
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/secret/rotate"
        return cast(str, self._call("POST", path)["secret"])

    def test_webhook(self, project_id: str, webhook_id: str) -> str:
        """Queues a signed ``webhook.test`` delivery; returns its delivery id."""
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/test"
        return cast(str, self._call("POST", path)["deliveryId"])

    def deliveries(self, project_id: str, webhook_id: str) -> List[Delivery]:
        """The webhook's newest 100 deliveries, newest first."""
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/deliveries"
        return cast(List[Delivery], self._call("GET", path))

    def redeliver(self, project_id: str, delivery_id: str) -> str:
        """Sends a delivery again (same body and webhook-id); returns its delivery id."""
        path = f"/projects/{seg(project_id)}/deliveries/{seg(delivery_id)}/redeliver"
        return cast(str, self._call("POST", path)["deliveryId"])


__all__ = ["Vigil"]
