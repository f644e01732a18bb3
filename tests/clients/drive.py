"""Drives `vigil serve` with the client openapi-python-client generated from openapi.yaml, as an
integrator would (tests/clients.rs runs it): every read route's answer must parse into its typed
model, and an event posted with signals (userAgentData's brands, activity) must come back
evaluated. Usage: drive.py GENERATED_DIR BASE_URL KEY PROJECT SESSION
"""

import sys

sys.path.insert(0, sys.argv[1])
base, key, project, session = sys.argv[2:6]

from vigil_client import AuthenticatedClient  # noqa: E402
from vigil_client.api.default import (  # noqa: E402
    create_event, get_event, get_plan, get_project, get_stats, get_usage, list_deliveries,
    list_device_sessions, list_events, list_projects, list_results, list_sessions, list_webhooks,
    session_score,
)
from vigil_client.models import (  # noqa: E402
    Activity, Error, EventData, EventSignals, GetPlanResponse200, GetStatsResponse200,
    GetUsageResponse200, ListDeliveriesResponse200, ListDeviceSessionsResponse200, ListEventsResponse200,
    ListProjectsResponse200, ListResultsResponse200, ListSessionsResponse200, ListWebhooksResponse200,
    NewEvent, ProjectData, SessionScoreData, UaBrand, UaData,
)

client = AuthenticatedClient(base_url=base, token=key, raise_on_unexpected_status=True)
checked = []


def expect(name, answer, model):
    if not isinstance(answer, model):
        sys.exit(f"{name}: expected {model.__name__}, got {answer!r}")
    checked.append(name)
    return answer


event = expect("createEvent", create_event.sync(project, session, client=client, body=NewEvent(
    ip_address="84.128.0.9",
    user_agent="Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
    signals=EventSignals(
        webdriver=False,
        ua_data=UaData(brands=[UaBrand(brand="Chromium", version="156"), UaBrand(brand="Google Chrome", version="156")],
                       mobile=False, platform="Linux"),
        languages=["de-DE", "de"], time_zone="Europe/Berlin", screen_width=1920, screen_height=1080,
        hardware_concurrency=8, webgl_renderer="ANGLE (Intel)",
        activity=Activity(action="checkout", elapsed_ms=5200, moves=40, presses=2, keys=12),
    ),
)), EventData).data
if not event.reasons and event.score_bot is None:
    sys.exit("the event came back without a verdict")

expect("getEvent", get_event.sync(project, session, event.id, client=client), EventData)
expect("listEvents", list_events.sync(project, session, client=client), ListEventsResponse200)
expect("listResults", list_results.sync(project, session, client=client), ListResultsResponse200)
expect("sessionScore", session_score.sync(project, session, client=client), SessionScoreData)
expect("getPlan", get_plan.sync(client=client), GetPlanResponse200)
expect("getProject", get_project.sync(project, client=client), ProjectData)
expect("listProjects", list_projects.sync(client=client), ListProjectsResponse200)
expect("getUsage", get_usage.sync(client=client), GetUsageResponse200)
hooks = expect("listWebhooks", list_webhooks.sync(project, client=client), ListWebhooksResponse200).data
if hooks:
    expect("listDeliveries", list_deliveries.sync(project, hooks[0].id, client=client), ListDeliveriesResponse200)
expect("listSessions", list_sessions.sync(project, client=client), ListSessionsResponse200)
expect("getStats", get_stats.sync(project, client=client), GetStatsResponse200)
if isinstance(event.device, str):
    expect("listDeviceSessions", list_device_sessions.sync(project, event.device, client=client),
           ListDeviceSessionsResponse200)
missing = get_project.sync("prj_missing", client=client)
expect("getProject (404)", missing, Error)
print(f"python client: {len(checked)} answers parsed: {', '.join(checked)}; "
      f"event {event.id} scoreBot {event.score_bot} reasons {[r.code for r in event.reasons]}")
