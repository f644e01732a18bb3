"""The API's JSON shapes as ``TypedDict``s, keys in the API's camelCase.

Each class mirrors one schema of ``openapi.yaml`` (named in its docstring);
``tests/test_openapi_drift.py`` checks that the keys and the required keys are
exactly the schema's, so a change to the API fails the suite instead of
silently drifting. Schemas with optional members use the two-class idiom
(required base, ``total=False`` subclass) because ``typing.Required`` is
Python 3.11+ and this package supports 3.9.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict

AgentStatus = Literal["verified", "signed_unknown", "spoofed", "unsigned"]
AgentCategory = Literal[
    "ai_agent", "ai_crawler", "search", "monitor", "preview", "archive", "seo", "feed", "other"
]
AgentVia = Literal["signature", "ip_range", "user_agent"]
WebhookType = Literal["proxy_vpn_detect", "bot_detect"]
PlanStatus = Literal["trialing", "active", "past_due", "canceled", "unpaid", "paused"]
HttpVersion = Literal["1.0", "1.1", "2", "3"]
Granularity = Literal["hour", "day"]
LabelKind = Literal["bot", "human"]
ModelChoice = Literal["latest", "shared"]
#: ``ReasonCounts``: ``(code, sessions)`` pairs, most first (JSON pairs, made tuples).
ReasonCounts = List[Tuple[str, int]]


class Result(TypedDict):
    """``Result``: one scored visit of a session."""

    scoreBot: float
    scoreProxyVpn: float
    ipAddress: str
    createdAt: str


class SessionScore(TypedDict):
    """``SessionScoreData.data``: the session's maxima over its results."""

    scoreBot: float
    scoreProxyVpn: float


class Plan(TypedDict):
    """``Plan``."""

    id: str
    name: str
    description: str
    maxRps: int
    maxProjects: int
    maxRequests: int
    expiresAt: Optional[str]
    subscribedAt: str
    status: PlanStatus
    unsubscribedAt: Optional[str]


class AgentPolicy(TypedDict):
    """``AgentPolicy``: categories or operators of verified agents counted as no bot."""

    allow: List[str]


class CalibratedWeights(TypedDict):
    """``Calibration.weights``: the bias and the bot reasons whose weight differs from the shared."""

    bias: float
    weights: Dict[str, float]


class CalibrationComparison(TypedDict):
    """``Calibration.comparison``: the fit against the shared weights on held-out labels."""

    trainedOn: int
    heldOut: int
    sharedLogLoss: float
    modelLogLoss: float
    sharedErrors: int
    modelErrors: int
    threshold: float


class Calibration(TypedDict):
    """``Calibration``: a project's kept fit; its events say ``model: v{version}``."""

    version: int
    fittedAt: str
    weights: CalibratedWeights
    comparison: CalibrationComparison


class Project(TypedDict):
    """``Project``: ``apiKeyPublic`` goes in pages, ``apiKeyPrivate`` never leaves the backend."""

    id: str
    name: str
    apiKeyPublic: str
    apiKeyPrivate: str
    domain: str
    disabled: bool
    requireSessionToken: bool
    webhookLegacySignature: bool
    agents: AgentPolicy
    sealedResults: bool
    model: ModelChoice
    calibration: Optional[Calibration]
    createdAt: str


class _NewProjectRequired(TypedDict):
    name: str
    domain: str


class NewProject(_NewProjectRequired, total=False):
    """``NewProject``: the body of ``create_project``."""

    requireSessionToken: bool


class ProjectChanges(TypedDict, total=False):
    """``ProjectChanges``: at least one member; null is not a value of any."""

    name: str
    domain: str
    disabled: bool
    requireSessionToken: bool
    webhookLegacySignature: bool
    agents: AgentPolicy
    sealedResults: bool
    model: ModelChoice


class NewWebhook(TypedDict):
    """``NewWebhook``."""

    type: WebhookType
    url: str


class Webhook(TypedDict):
    """``Webhook`` as listed (its secret is never in a listing)."""

    id: str
    type: WebhookType
    url: str
    createdAt: str


class Delivery(TypedDict):
    """``Delivery``: one entry of a webhook's delivery log."""

    id: str
    sessionId: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    lastStatusCode: Optional[int]
    lastError: Optional[str]
    nextAttemptAt: Optional[str]
    createdAt: str


class Usage(TypedDict):
    """``Usage``: the current billing period's request count."""

    periodStart: str
    periodEnd: str
    requests: int
    maxRequests: int
    remaining: int


class Reason(TypedDict):
    """``Reason``: why a score is what it is (``detail`` quotes visitor text: render as text)."""

    code: str
    score: Literal["bot", "proxyVpn"]
    weight: float
    detail: str


class Agent(TypedDict):
    """``Agent``: who the visit says it is and whether that holds."""

    status: AgentStatus
    operator: Optional[str]
    name: Optional[str]
    category: Optional[AgentCategory]
    via: Optional[AgentVia]


class _SynRequired(TypedDict):
    ttl: int
    window: int


class Syn(_SynRequired, total=False):
    """``Syn``: the TCP SYN fields its sender's operating system chose."""

    mss: Optional[int]
    windowScale: Optional[int]
    options: List[str]


class Transport(TypedDict, total=False):
    """``Transport``: the connection's measured round trips and SYN."""

    tcpRttMs: Optional[float]
    endToEndRttMs: Optional[float]
    endToEndSamples: Optional[int]
    syn: Optional[Syn]


class Wire(TypedDict, total=False):
    """``Wire``: what a JA4-aware edge saw of the connection."""

    ja4: Optional[str]
    httpVersion: Optional[HttpVersion]
    headerOrder: Optional[List[str]]
    transport: Optional[Transport]


class RequestLine(TypedDict, total=False):
    """``RequestLine``: the request a Web Bot Auth signature covers."""

    method: Optional[str]
    authority: Optional[str]
    path: Optional[str]


class _UaBrandRequired(TypedDict):
    brand: str


class UaBrand(_UaBrandRequired, total=False):
    """``UaBrand``: one of ``navigator.userAgentData.brands``."""

    version: str


class UaData(TypedDict, total=False):
    """``UaData``: ``navigator.userAgentData``'s low-entropy values."""

    brands: List[UaBrand]
    mobile: Optional[bool]
    platform: Optional[str]


class Activity(TypedDict, total=False):
    """``Activity``: input counts between a page's load and an action."""

    action: Optional[str]
    elapsedMs: Optional[int]
    moves: Optional[int]
    presses: Optional[int]
    untrustedPresses: Optional[int]
    untrustedClicks: Optional[int]
    zeroPressure: Optional[int]
    keys: Optional[int]
    untrustedKeys: Optional[int]
    charsWithoutKeydown: Optional[int]
    capitalsWithoutShift: Optional[int]
    keyIntervals: Optional[int]
    fastKeyIntervals: Optional[int]
    firstInputMs: Optional[int]
    kin: Optional["Hand"]
    foreign: Optional[List[str]]


class Hand(TypedDict, total=False):
    """``Hand``: a page's movements, presses, wheel and keys, as numbers."""

    m: List[List[float]]
    holds: List[float]
    keys: Optional[int]
    wheels: Optional[int]
    ratios: List[float]
    keyHolds: List[float]
    keyGaps: List[float]
    noCode: Optional[int]
    mouse: Optional[int]
    screenEq: Optional[int]


class PageSummary(Activity, total=False):
    """``PageSummary``: ``Activity`` over a whole page, plus its other input and time."""

    clicks: Optional[int]
    wheels: Optional[int]
    touches: Optional[int]
    scrolls: Optional[int]
    dwellMs: Optional[int]
    visibleMs: Optional[int]
    focusMs: Optional[int]
    left: Optional[str]


class Navigation(TypedDict, total=False):
    """``Navigation``: how the page was reached."""

    type: Optional[str]
    referrer: Optional[str]
    sinceInputMs: Optional[int]
    previous: Optional[PageSummary]


class EventSignals(TypedDict, total=False):
    """``EventSignals``: the agent's signals as a backend passes them (unknown names are a 400)."""

    webdriver: Optional[bool]
    userAgent: Optional[str]
    uaData: Optional[UaData]
    languages: Optional[List[str]]
    timeZone: Optional[str]
    timezoneOffset: Optional[int]
    plugins: Optional[int]
    screenWidth: Optional[float]
    screenHeight: Optional[float]
    outerWidth: Optional[float]
    outerHeight: Optional[float]
    innerWidth: Optional[float]
    innerHeight: Optional[float]
    webglVendor: Optional[str]
    webglRenderer: Optional[str]
    evalLength: Optional[int]
    productSub: Optional[str]
    automationGlobals: Optional[List[str]]
    webrtcIps: Optional[List[str]]
    hardwareConcurrency: Optional[int]
    maxTouchPoints: Optional[int]
    activity: Optional[Activity]
    navigation: Optional[Navigation]


class _NewEventRequired(TypedDict):
    ipAddress: str


class NewEvent(_NewEventRequired, total=False):
    """``NewEvent``: the visitor's evidence a backend reports (``create_event``)."""

    userAgent: Optional[str]
    headers: Optional[Dict[str, str]]
    signals: Optional[EventSignals]
    wire: Optional[Wire]
    request: Optional[RequestLine]


class Event(TypedDict):
    """``Event``: an evaluated (or seeded) visit of a session."""

    id: str
    sessionId: str
    createdAt: str
    ipAddress: str
    scoreBot: float
    scoreProxyVpn: float
    reasons: List[Reason]
    engineVersion: Optional[str]
    model: Optional[str]
    ja4: Optional[str]
    transport: Optional[Transport]
    device: Optional[str]
    agent: Optional[Agent]
    allowed: bool


class SessionSummary(TypedDict):
    """``SessionSummary``: one row of the sessions lists."""

    sessionId: str
    scoreBot: float
    scoreProxyVpn: float
    lastSeenAt: str
    events: int
    lastReasons: List[Reason]
    agent: Optional[AgentStatus]


class StatsBucket(TypedDict):
    """``StatsBucket``: one hour or day of a project's traffic."""

    start: str
    visits: int
    bots: int
    proxies: int
    reasons: Dict[str, int]


class QueuedDelivery(TypedDict):
    """``QueuedEnvelope.data``: what ``test_webhook`` and ``redeliver`` queued."""

    deliveryId: str


class WebhookSecret(TypedDict):
    """``SecretEnvelope.data``: null for a webhook signed with the legacy project key only."""

    secret: Optional[str]


class SealingKey(TypedDict):
    """``SealingKey``: a JWK (RFC 7517) that opens a project's sealed verdicts.

    ``expiresAt`` is null for the key that seals now; for a key rotated out, when it stops
    being listed (its overlap's end).
    """

    kty: Literal["oct"]
    kid: str
    k: str
    alg: Literal["dir"]
    enc: Literal["A256GCM"]
    use: Literal["enc"]
    expiresAt: Optional[str]


class SealingKeys(TypedDict):
    """``SealingKeysEnvelope.data``: whether the project seals, and its keys (current first)."""

    sealedResults: bool
    keys: List[SealingKey]


class _NewLabelRequired(TypedDict):
    label: LabelKind


class NewLabel(_NewLabelRequired, total=False):
    """``NewLabel``: the body of ``label_session``.

    ``reason`` is your own short code (``^[a-z][a-z0-9_]{0,63}$``: ``chargeback``,
    ``support_ticket``), ``note`` free text of at most 500 characters.
    """

    reason: str
    note: str


class Label(TypedDict):
    """``Label``: what you said a session was, with its ``scoreBot`` and reasons at the time."""

    sessionId: str
    label: LabelKind
    reason: Optional[str]
    note: Optional[str]
    labelledAt: str
    scoreBot: float
    reasons: List[str]


class Quality(TypedDict):
    """``Quality``: how right the engine was on the sessions labelled in a range.

    ``precision`` and ``recall`` are null when nothing is there to divide by (no session
    flagged at ``threshold``, no session labelled a bot).
    """

    labelled: int
    bots: int
    humans: int
    threshold: float
    precision: Optional[float]
    recall: Optional[float]
    falsePositives: int
    missedBots: int
    falsePositiveReasons: ReasonCounts
    missedBotReasons: ReasonCounts


class SealedVerdict(TypedDict):
    """The claims of a sealed verdict (``getSealingKey`` in openapi.yaml lists them).

    Not an openapi.yaml schema (a verdict travels encrypted, through the page), hence not
    drift-checked. ``reasons`` are the reasons' codes, ``agent`` the agent's status, ``iat`` and
    ``exp`` Unix seconds.
    """

    eventId: str
    sessionId: str
    projectId: str
    scoreBot: float
    scoreProxyVpn: float
    reasons: List[str]
    device: Optional[str]
    agent: Optional[AgentStatus]
    createdAt: str
    origin: str
    iat: int
    exp: int


class WebhookEvent(TypedDict):
    """A delivery's body (docs/integrate.md, "Webhook delivery"); ``data`` depends on ``type``.

    Not an openapi.yaml schema (deliveries are not routes), hence not drift-checked.
    """

    type: str
    timestamp: str
    data: Dict[str, Any]


__all__ = [
    "Activity",
    "Agent",
    "AgentCategory",
    "AgentPolicy",
    "AgentStatus",
    "AgentVia",
    "CalibratedWeights",
    "Calibration",
    "CalibrationComparison",
    "Delivery",
    "Event",
    "EventSignals",
    "Granularity",
    "HttpVersion",
    "Label",
    "LabelKind",
    "ModelChoice",
    "Navigation",
    "NewEvent",
    "NewLabel",
    "NewProject",
    "NewWebhook",
    "PageSummary",
    "Plan",
    "PlanStatus",
    "Project",
    "ProjectChanges",
    "Quality",
    "QueuedDelivery",
    "Reason",
    "ReasonCounts",
    "RequestLine",
    "Result",
    "SealedVerdict",
    "SealingKey",
    "SealingKeys",
    "SessionScore",
    "SessionSummary",
    "StatsBucket",
    "Syn",
    "Transport",
    "UaBrand",
    "UaData",
    "Usage",
    "Webhook",
    "WebhookEvent",
    "WebhookSecret",
    "WebhookType",
    "Wire",
]
