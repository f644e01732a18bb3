"""vigil_client.types and the client's methods against openapi.yaml: any drift fails here."""

from __future__ import annotations

import inspect
from typing import Any, Dict, Set, Tuple

import pytest
import yaml

from vigil_client import AsyncVigil, Vigil
from vigil_client import types as t

# TypedDict -> the schema it mirrors, as a JSON pointer into the document.
MIRRORS: Dict[Any, str] = {
    t.Result: "#/components/schemas/Result",
    t.SessionScore: "#/components/schemas/SessionScoreData/properties/data",
    t.Plan: "#/components/schemas/Plan",
    t.AgentPolicy: "#/components/schemas/AgentPolicy",
    t.Project: "#/components/schemas/Project",
    t.Calibration: "#/components/schemas/Calibration",
    t.CalibratedWeights: "#/components/schemas/Calibration/properties/weights",
    t.CalibrationComparison: "#/components/schemas/Calibration/properties/comparison",
    t.NewProject: "#/components/schemas/NewProject",
    t.ProjectChanges: "#/components/schemas/ProjectChanges",
    t.NewWebhook: "#/components/schemas/NewWebhook",
    t.Webhook: "#/components/schemas/Webhook",
    t.Delivery: "#/components/schemas/Delivery",
    t.Usage: "#/components/schemas/Usage",
    t.Reason: "#/components/schemas/Reason",
    t.Agent: "#/components/schemas/Agent",
    t.Syn: "#/components/schemas/Syn",
    t.Transport: "#/components/schemas/Transport",
    t.Wire: "#/components/schemas/Wire",
    t.RequestLine: "#/components/schemas/RequestLine",
    t.UaBrand: "#/components/schemas/UaBrand",
    t.UaData: "#/components/schemas/UaData",
    t.Activity: "#/components/schemas/Activity",
    t.Hand: "#/components/schemas/Hand",
    t.PageSummary: "#/components/schemas/PageSummary",
    t.Navigation: "#/components/schemas/Navigation",
    t.EventSignals: "#/components/schemas/EventSignals",
    t.NewEvent: "#/components/schemas/NewEvent",
    t.Event: "#/components/schemas/Event",
    t.SessionSummary: "#/components/schemas/SessionSummary",
    t.StatsBucket: "#/components/schemas/StatsBucket",
    t.QueuedDelivery: "#/components/schemas/QueuedEnvelope/properties/data",
    t.WebhookSecret: "#/components/schemas/SecretEnvelope/properties/data",
    t.SealingKey: "#/components/schemas/SealingKey",
    t.SealingKeys: "#/components/schemas/SealingKeysEnvelope/properties/data",
    t.NewLabel: "#/components/schemas/NewLabel",
    t.Label: "#/components/schemas/Label",
    t.Quality: "#/components/schemas/Quality",
}

# Every developer-key operation -> the client method that calls it.
ROUTES: Dict[Tuple[str, str], str] = {
    ("get", "/plan"): "plan",
    ("get", "/usage"): "usage",
    ("get", "/projects"): "projects",
    ("post", "/projects"): "create_project",
    ("get", "/projects/{projectId}"): "project",
    ("patch", "/projects/{projectId}"): "update_project",
    ("get", "/results/{projectId}/{sessionId}"): "results",
    ("get", "/results/{projectId}/{sessionId}/general"): "session_score",
    ("post", "/projects/{projectId}/sessions/{sessionId}/events"): "create_event",
    ("get", "/projects/{projectId}/sessions/{sessionId}/events"): "events",
    ("get", "/projects/{projectId}/sessions/{sessionId}/events/{eventId}"): "event",
    ("get", "/projects/{projectId}/sessions"): "sessions",
    ("get", "/projects/{projectId}/devices/{device}/sessions"): "device_sessions",
    ("get", "/projects/{projectId}/stats"): "stats",
    ("put", "/projects/{projectId}/sessions/{sessionId}/label"): "label_session",
    ("get", "/projects/{projectId}/sessions/{sessionId}/label"): "label",
    ("delete", "/projects/{projectId}/sessions/{sessionId}/label"): "unlabel_session",
    ("get", "/projects/{projectId}/labels"): "labels",
    ("get", "/projects/{projectId}/quality"): "quality",
    ("get", "/projects/{projectId}/sealing-key"): "sealing_key",
    ("post", "/projects/{projectId}/sealing-key/rotate"): "rotate_sealing_key",
    ("post", "/projects/{projectId}/webhooks"): "create_webhook",
    ("get", "/projects/{projectId}/webhooks"): "webhooks",
    ("delete", "/projects/{projectId}/webhooks/{webhookId}"): "delete_webhook",
    ("get", "/projects/{projectId}/webhooks/{webhookId}/secret"): "webhook_secret",
    ("post", "/projects/{projectId}/webhooks/{webhookId}/secret/rotate"): "rotate_webhook_secret",
    ("post", "/projects/{projectId}/webhooks/{webhookId}/test"): "test_webhook",
    ("get", "/projects/{projectId}/webhooks/{webhookId}/deliveries"): "deliveries",
    ("post", "/projects/{projectId}/deliveries/{deliveryId}/redeliver"): "redeliver",
}

# Query parameters as the API names them -> the keyword the methods take.
QUERY_KEYWORDS = {
    "limit": "limit",
    "cursor": None,  # followed from Link, never passed by hand
    "minScoreBot": "min_score_bot",
    "minScoreProxyVpn": "min_score_proxy_vpn",
    "agent": "agent",
    "granularity": "granularity",
    "from": "from_",
    "to": "to",
}


@pytest.fixture(scope="module")
def spec(openapi_path: str) -> Dict[str, Any]:
    with open(openapi_path, encoding="utf-8") as f:
        document: Dict[str, Any] = yaml.safe_load(f)
    return document


def resolve(spec: Dict[str, Any], pointer: str) -> Dict[str, Any]:
    node: Any = spec
    for part in pointer.lstrip("#/").split("/"):
        node = node[part]
    if "$ref" in node:
        return resolve(spec, node["$ref"])
    return dict(node)


def keys_of(spec: Dict[str, Any], schema: Dict[str, Any]) -> Tuple[Set[str], Set[str]]:
    """(properties, required) of an object schema, through allOf (PageSummary)."""
    props, required = set(schema.get("properties", {})), set(schema.get("required", []))
    for part in schema.get("allOf", []):
        sub = resolve(spec, part["$ref"]) if "$ref" in part else part
        more_props, more_required = keys_of(spec, sub)
        props |= more_props
        required |= more_required
    return props, required


@pytest.mark.parametrize("typed", list(MIRRORS), ids=lambda c: c.__name__)
def test_typeddict_matches_schema(spec: Dict[str, Any], typed: Any) -> None:
    props, required = keys_of(spec, resolve(spec, MIRRORS[typed]))
    assert props, f"{MIRRORS[typed]} has no properties"
    assert set(typed.__annotations__) | set(typed.__required_keys__) == props
    assert set(typed.__required_keys__) == required
    assert set(typed.__optional_keys__) == props - required


def test_every_developer_route_has_a_method(spec: Dict[str, Any]) -> None:
    documented: Set[Tuple[str, str]] = set()
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                # Operations with `security: []` are the public ones (collect, agent.js, docs).
                if operation.get("security", spec["security"]):
                    documented.add((method, path))
    assert documented == set(ROUTES)
    for (method, path), name in ROUTES.items():
        operation = spec["paths"][path][method]
        for client in (Vigil, AsyncVigil):
            function = getattr(client, name)
            accepted = set(inspect.signature(function).parameters)
            for parameter in operation.get("parameters", []):
                if "$ref" in parameter:
                    parameter = resolve(spec, parameter["$ref"])
                if parameter["in"] == "query":
                    keyword = QUERY_KEYWORDS[parameter["name"]]
                    assert keyword is None or keyword in accepted, (name, parameter["name"])
                if parameter["in"] == "header" and parameter["name"] == "Idempotency-Key":
                    assert "idempotency_key" in accepted, name
