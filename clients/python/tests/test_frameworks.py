"""The FastAPI dependency and the Django middleware, each minting a token /v1/collect accepts."""

from __future__ import annotations

from typing import Callable, Dict, Optional, Union

import httpx
import pytest
from conftest import django_configured, new_session_id

from vigil_client import AsyncVigil, Vigil

Collect = Callable[[str, str, Optional[str]], httpx.Response]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_fastapi_dependency(
    flavour: str, base_url: str, api_key: str, project_id: str, collect: Collect
) -> None:
    from fastapi import Depends, FastAPI
    from fastapi.testclient import TestClient

    from vigil_client.fastapi import VigilSession, session

    client: Union[Vigil, AsyncVigil] = (
        # The API reference's base (with /v1) works as well as the origin.
        Vigil(api_key=api_key, base_url=f"{base_url}/v1", max_retries=10)
        if flavour == "sync"
        else AsyncVigil(api_key=api_key, base_url=f"{base_url}/v1/", max_retries=10)
    )
    app = FastAPI()
    vigil_session = session(client, project=project_id, cookie="vs")

    @app.get("/page")
    async def page(s: VigilSession = Depends(vigil_session)) -> Dict[str, Optional[str]]:
        assert s.available, s.error
        return {
            "projectId": s.project_id,
            "publicKey": s.public_key,
            "sessionId": s.session_id,
            "sessionToken": s.session_token,
        }

    with TestClient(app) as browser:
        first = browser.get("/page")
        assert first.status_code == 200
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower()
        page1 = first.json()
        assert page1["projectId"] == project_id and page1["publicKey"].startswith("pk_")
        assert browser.cookies["vs"] == page1["sessionId"]

        second = browser.get("/page")  # the cookie comes back: same session, no new cookie
        assert second.json()["sessionId"] == page1["sessionId"]
        assert "set-cookie" not in second.headers

        browser.cookies.clear()
        assert browser.get("/page").json()["sessionId"] != page1["sessionId"]

    answer = collect(page1["publicKey"], page1["sessionId"], page1["sessionToken"])
    assert answer.status_code == 202, answer.text
    if isinstance(client, Vigil):
        client.close()


def test_fastapi_dependency_with_given_keys_makes_no_call(collect: Collect) -> None:
    from fastapi import Depends, FastAPI
    from fastapi.testclient import TestClient

    from vigil_client.fastapi import VigilSession, session

    # A client pointing nowhere: any API call would fail the request.
    dead = Vigil(api_key="vgl_live_x", base_url="http://127.0.0.1:9", max_retries=0)
    app = FastAPI()
    dep = session(dead, project="prj_x", project_secret="sk_given", public_key="pk_given")

    @app.get("/")
    async def page(s: VigilSession = Depends(dep)) -> Dict[str, Optional[str]]:
        return {"publicKey": s.public_key, "token": s.session_token, "sessionId": s.session_id}

    with TestClient(app) as browser:
        body = browser.get("/").json()
    assert body["publicKey"] == "pk_given"
    expiry = body["token"].split(".")[0]
    import hashlib
    import hmac

    expected = hmac.new(
        b"sk_given", f"vigil/{body['sessionId']}:{expiry}".encode(), hashlib.sha256
    ).hexdigest()
    assert body["token"] == f"{expiry}.{expected}"
    dead.close()


def test_django_middleware(base_url: str, api_key: str, project_id: str, collect: Collect) -> None:
    from django.http import HttpRequest, HttpResponse
    from django.test import RequestFactory, override_settings

    django_configured()
    from vigil_client.django import VigilMiddleware, VigilSession

    seen = []

    def view(request: HttpRequest) -> HttpResponse:
        seen.append(getattr(request, "vigil"))
        return HttpResponse("ok")

    with override_settings(
        VIGIL_API_KEY=api_key, VIGIL_PROJECT=project_id, VIGIL_BASE_URL=f"{base_url}/v1/"
    ):
        middleware = VigilMiddleware(view)
    factory = RequestFactory()

    response = middleware(factory.get("/"))
    first: VigilSession = seen[-1]
    assert first.available and first.error is None
    assert first.project_id == project_id and (first.public_key or "").startswith("pk_")
    morsel = response.cookies["vigil_session"]
    assert morsel.value == first.session_id
    assert morsel["httponly"] and morsel["samesite"] == "Lax"

    returning = factory.get("/")
    returning.COOKIES["vigil_session"] = first.session_id
    response = middleware(returning)
    assert seen[-1].session_id == first.session_id and "vigil_session" not in response.cookies

    forged = factory.get("/")
    forged.COOKIES["vigil_session"] = "../../etc"  # not an id: replaced, never reused
    middleware(forged)
    assert seen[-1].session_id not in ("../../etc", first.session_id)

    assert first.public_key is not None and first.session_token is not None
    answer = collect(first.public_key, first.session_id, first.session_token)
    assert answer.status_code == 202, answer.text
    assert collect(first.public_key, new_session_id(), first.session_token).status_code == 401
