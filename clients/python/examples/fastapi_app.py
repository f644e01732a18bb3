"""A shop page with the Vigil agent, and a checkout that asks for the verdict first.

    pip install "vigil-client[fastapi]" uvicorn
    VIGIL_API_KEY=vgl_live_... VIGIL_BASE_URL=http://127.0.0.1:3000 uvicorn fastapi_app:app --port 8000

Open http://localhost:8000/ (the demo project accepts any loopback origin), then POST /checkout.
"""

from __future__ import annotations

import json
import os
from typing import Dict

import anyio
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse

from vigil_client import AsyncVigil, VigilError
from vigil_client.fastapi import VigilSession, session

PROJECT = os.environ.get("VIGIL_PROJECT", "prj_demo")

vigil = AsyncVigil()  # VIGIL_API_KEY and VIGIL_BASE_URL from the environment
# Fail open (the default): with Vigil stopped or slow (2 s at most), the shop still sells and
# the page comes without the agent. on_error="closed" would answer 503 instead.
vigil_session = session(vigil, project=PROJECT)
app = FastAPI()


def js(value: str) -> str:
    """A JS string literal safe inside <script> (no `</script>` can close it early)."""
    return json.dumps(value).replace("<", "\\u003c")


# response_class + a returned str: FastAPI then adds the session cookie the dependency set.
@app.get("/", response_class=HTMLResponse)
async def page(s: VigilSession = Depends(vigil_session)) -> str:
    agent = ""
    if s.public_key is not None and s.session_token is not None:  # s.available
        agent = f"""<script src="{vigil.base_url}/v1/agent.js"></script>
<script>
  Vigil.collect({{ publicKey: {js(s.public_key)}, sessionId: {js(s.session_id)},
                  sessionToken: {js(s.session_token)} }});
</script>"""
    # Without the keys (Vigil unavailable) the page is served without the agent.
    return f"""<!doctype html>
<title>Shop</title>
{agent}
<form method="post" action="/checkout" data-vigil-action="checkout"><button>Buy</button></form>
"""


@app.post("/checkout")
async def checkout(request: Request, s: VigilSession = Depends(vigil_session)) -> Dict[str, str]:
    # Report what this backend saw too: the server's view of the visitor cannot be faked by it.
    # Bounded like the verdict below: a slow or stopped Vigil costs the checkout 1 s at most.
    with anyio.move_on_after(1.0):
        try:
            await vigil.create_event(
                PROJECT,
                s.session_id,
                {
                    "ipAddress": request.client.host if request.client else "127.0.0.1",
                    "userAgent": request.headers.get("user-agent"),
                },
            )
        except VigilError:
            pass  # not recorded; the verdict below still decides
    # Fail open: an outage or a slow answer must not stop a paying customer.
    score = await vigil.verdict(PROJECT, s.session_id, timeout=1.0)
    if score is not None and score["scoreBot"] >= 0.9:
        raise HTTPException(status_code=403, detail="automated traffic")
    return {"status": "ordered", "session": s.session_id}
