"""The asyncio/trio client, on ``httpx.AsyncClient``: the same surface as ``Vigil``, awaited."""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import (
    Any,
    AsyncIterator,
    Dict,
    List,
    Mapping,
    Optional,
    Type,
    TypeVar,
    Union,
    cast,
    overload,
)

import time

import anyio
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


class AsyncVigil:
    """The async twin of :class:`vigil_client.Vigil`; paged lists are async iterators.

    Use ``async with AsyncVigil(...) as vigil:``, or call ``await vigil.aclose()``.
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
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self.base_url = _base.resolve_base_url(base_url)
        self.max_retries = max_retries
        self.rate_limit: Optional[RateLimit] = None
        self._headers = _base.default_headers(_base.resolve_api_key(api_key))
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._timeout = timeout
        self.sealing_key_refetch_interval = _sealed.DEFAULT_REFETCH_INTERVAL
        self._sealing_keys: Dict[str, _sealed.CachedKeys] = {}

    # --- lifecycle ---

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncVigil":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    # --- transport ---

    async def _send(
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
                response = await self._http.request(
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
            if response.status_code == 429 and attempt < retries and (
                deadline is None or time.monotonic() + _base.retry_delay(response) < deadline
            ):
                attempt += 1
                # anyio, not asyncio: httpx's AsyncClient runs under trio as well.
                await anyio.sleep(_base.retry_delay(response))
                continue
            return response

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return _base.unwrap(await self._send(method, f"{self.base_url}/v1{path}", **kwargs))

    async def _pages(self, path: str, params: Params) -> AsyncIterator[Any]:
        url: Optional[str] = f"{self.base_url}/v1{path}"
        query: Optional[Params] = params
        while url is not None:
            response = await self._send("GET", url, params=query)
            for item in _base.unwrap(response) or []:
                yield item
            link = _base.next_link(response.headers.get("link"))
            url, query = (str(response.url.join(link)), None) if link else (None, None)

    # --- account ---

    async def plan(self) -> Plan:
        return cast(Plan, await self._call("GET", "/plan"))

    async def usage(self) -> Usage:
        return cast(Usage, await self._call("GET", "/usage"))

    # --- projects ---

    async def projects(self) -> List[Project]:
        return cast(List[Project], await self._call("GET", "/projects"))

    async def project(self, project_id: str) -> Project:
        return cast(Project, await self._call("GET", f"/projects/{seg(project_id)}"))

    async def create_project(
        self,
        name: str,
        domain: str,
        *,
        require_session_token: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
    ) -> Project:
        body: Dict[str, Any] = {"name": name, "domain": domain}
        if require_session_token is not None:
            body["requireSessionToken"] = require_session_token
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return cast(Project, await self._call("POST", "/projects", json=body, headers=headers))

    async def update_project(self, project_id: str, changes: ProjectChanges) -> Project:
        path = f"/projects/{seg(project_id)}"
        return cast(Project, await self._call("PATCH", path, json=dict(changes)))

    # --- sealed verdicts ---

    async def sealing_key(self, project_id: str) -> SealingKeys:
        path = f"/projects/{seg(project_id)}/sealing-key"
        keys = cast(SealingKeys, await self._call("GET", path))
        self._sealing_keys[project_id] = _sealed.CachedKeys(keys)
        return keys

    async def rotate_sealing_key(self, project_id: str) -> SealingKeys:
        path = f"/projects/{seg(project_id)}/sealing-key/rotate"
        keys = cast(SealingKeys, await self._call("POST", path))
        self._sealing_keys[project_id] = _sealed.CachedKeys(keys)
        return keys

    async def open_project_sealed(
        self,
        project_id: str,
        sealed: str,
        expect: Mapping[str, Any],
        *,
        timeout: float = _sealed.DEFAULT_KEYS_TIMEOUT,
    ) -> SealedVerdict:
        """``open_sealed`` with the project's keys, fetched once and cached (see ``Vigil``).

        ``expect`` names at least the visitor's ``sessionId``; ``projectId`` is ``project_id``.
        """
        checks = _sealed.project_expectations(project_id, expect)  # before any call
        cached = self._sealing_keys.get(project_id)
        if cached is None:
            return _sealed.open_sealed(
                sealed, await self._read_sealing_keys(project_id, timeout), expect=checks
            )
        try:
            return _sealed.open_sealed(sealed, cached.keys, expect=checks)
        except SealedVerdictError as exc:
            if not _sealed.worth_refetching(
                exc, sealed, cached, self.sealing_key_refetch_interval
            ):
                raise
        keys = await self._read_sealing_keys(project_id, timeout)
        return _sealed.open_sealed(sealed, keys, expect=checks)

    async def _read_sealing_keys(self, project_id: str, timeout: float) -> SealingKeys:
        """The project's keys for a request path: within ``timeout`` seconds in all (a 429 is
        retried only if its wait fits), then cached."""
        path = f"/projects/{seg(project_id)}/sealing-key"
        deadline = time.monotonic() + timeout
        with anyio.move_on_after(timeout):
            keys = cast(SealingKeys, await self._call("GET", path, deadline=deadline))
            self._sealing_keys[project_id] = _sealed.CachedKeys(keys)
            return keys
        raise VigilTimeoutError(f"no sealing keys from {self.base_url} within {timeout:g} s")

    # --- events, results, sessions ---

    async def create_event(
        self,
        project_id: str,
        session_id: str,
        evidence: NewEvent,
        idempotency_key: Optional[str] = None,
    ) -> Event:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/events"
        return cast(Event, await self._call("POST", path, json=dict(evidence), headers=headers))

    async def events(
        self, project_id: str, session_id: str, *, limit: Optional[int] = None
    ) -> AsyncIterator[Event]:
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/events"
        async for item in self._pages(path, drop_none({"limit": limit})):
            yield item

    async def event(self, project_id: str, session_id: str, event_id: str) -> Event:
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/events/{seg(event_id)}"
        return cast(Event, await self._call("GET", path))

    async def results(
        self, project_id: str, session_id: str, *, limit: Optional[int] = None
    ) -> AsyncIterator[Result]:
        path = f"/results/{seg(project_id)}/{seg(session_id)}"
        async for item in self._pages(path, drop_none({"limit": limit})):
            yield item

    async def session_score(self, project_id: str, session_id: str) -> SessionScore:
        path = f"/results/{seg(project_id)}/{seg(session_id)}/general"
        return cast(SessionScore, await self._call("GET", path))

    @overload
    async def verdict(
        self, project_id: str, session_id: str, *, timeout: float = 1.5
    ) -> Optional[SessionScore]: ...

    @overload
    async def verdict(
        self, project_id: str, session_id: str, *, timeout: float = 1.5, fallback: T
    ) -> Union[SessionScore, T]: ...

    async def verdict(
        self,
        project_id: str,
        session_id: str,
        *,
        timeout: float = 1.5,
        fallback: Any = None,
    ) -> Any:
        """The session's score within ``timeout`` seconds in all, else ``fallback``.

        Here the deadline is the whole call's (a cancel scope), not each phase's.
        """
        path = f"/results/{seg(project_id)}/{seg(session_id)}/general"
        with anyio.move_on_after(timeout):
            try:
                return await self._call(
                    "GET", path, timeout=httpx.Timeout(timeout), max_retries=0
                )
            except VigilError:
                return fallback
        return fallback

    async def sessions(
        self,
        project_id: str,
        *,
        limit: Optional[int] = None,
        min_score_bot: Optional[float] = None,
        min_score_proxy_vpn: Optional[float] = None,
        agent: Optional[AgentStatus] = None,
    ) -> AsyncIterator[SessionSummary]:
        params = drop_none(
            {
                "limit": limit,
                "minScoreBot": min_score_bot,
                "minScoreProxyVpn": min_score_proxy_vpn,
                "agent": agent,
            }
        )
        async for item in self._pages(f"/projects/{seg(project_id)}/sessions", params):
            yield item

    async def device_sessions(
        self,
        project_id: str,
        device: str,
        *,
        limit: Optional[int] = None,
        min_score_bot: Optional[float] = None,
        min_score_proxy_vpn: Optional[float] = None,
    ) -> AsyncIterator[SessionSummary]:
        params = drop_none(
            {"limit": limit, "minScoreBot": min_score_bot, "minScoreProxyVpn": min_score_proxy_vpn}
        )
        path = f"/projects/{seg(project_id)}/devices/{seg(device)}/sessions"
        async for item in self._pages(path, params):
            yield item

    async def stats(
        self,
        project_id: str,
        *,
        granularity: Optional[Granularity] = None,
        from_: Union[str, datetime, None] = None,
        to: Union[str, datetime, None] = None,
    ) -> List[StatsBucket]:
        params = drop_none(
            {
                "granularity": granularity,
                "from": None if from_ is None else _base.timestamp_param(from_),
                "to": None if to is None else _base.timestamp_param(to),
            }
        )
        path = f"/projects/{seg(project_id)}/stats"
        return cast(List[StatsBucket], await self._call("GET", path, params=params))

    # --- labels ---

    async def label_session(
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
        return cast(Label, await self._call("PUT", path, json=body))

    async def label(self, project_id: str, session_id: str) -> Label:
        """The session's label (``NotFoundError`` if it has none)."""
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/label"
        return cast(Label, await self._call("GET", path))

    async def unlabel_session(self, project_id: str, session_id: str) -> None:
        """Withdraws the session's label (``NotFoundError`` if it has none)."""
        path = f"/projects/{seg(project_id)}/sessions/{seg(session_id)}/label"
        await self._call("DELETE", path)

    async def labels(self, project_id: str, *, limit: Optional[int] = None) -> AsyncIterator[Label]:
        """Every label of the project, by session id, page after page."""
        params = drop_none({"limit": limit})
        async for item in self._pages(f"/projects/{seg(project_id)}/labels", params):
            yield item

    async def quality(
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
        return _base.quality(await self._call("GET", path, params=params))

    # --- webhooks ---

    async def create_webhook(self, project_id: str, type: WebhookType, url: str) -> str:
        path = f"/projects/{seg(project_id)}/webhooks"
        response = await self._send(
            "POST", f"{self.base_url}/v1{path}", json={"type": type, "url": url}
        )
        _base.unwrap(response)
        return _base.id_from_location(response)

    async def webhooks(self, project_id: str) -> List[Webhook]:
        path = f"/projects/{seg(project_id)}/webhooks"
        return cast(List[Webhook], await self._call("GET", path))

    async def delete_webhook(self, project_id: str, webhook_id: str) -> None:
        await self._call("DELETE", f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}")

    async def webhook_secret(self, project_id: str, webhook_id: str) -> Optional[str]:
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/secret"
        return cast(Optional[str], (await self._call("GET", path))["secret"])

    async def rotate_webhook_secret(self, project_id: str, webhook_id: str) -> str:
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/secret/rotate"
        return cast(str, (await self._call("POST", path))["secret"])

    async def test_webhook(self, project_id: str, webhook_id: str) -> str:
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/test"
        return cast(str, (await self._call("POST", path))["deliveryId"])

    async def deliveries(self, project_id: str, webhook_id: str) -> List[Delivery]:
        path = f"/projects/{seg(project_id)}/webhooks/{seg(webhook_id)}/deliveries"
        return cast(List[Delivery], await self._call("GET", path))

    async def redeliver(self, project_id: str, delivery_id: str) -> str:
        path = f"/projects/{seg(project_id)}/deliveries/{seg(delivery_id)}/redeliver"
        return cast(str, (await self._call("POST", path))["deliveryId"])


__all__ = ["AsyncVigil"]
