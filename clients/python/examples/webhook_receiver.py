"""A webhook receiver that accepts only deliveries signed by Vigil.

    pip install "vigil-client[fastapi]" uvicorn
    VIGIL_WEBHOOK_SECRET=whsec_... uvicorn webhook_receiver:app --port 8001

The secret is the webhook's own (``Vigil.webhook_secret(project_id, webhook_id)``); a receiver
still on legacy deliveries passes the project's ``apiKeyPrivate`` instead.
"""

from __future__ import annotations

import os

from fastapi import FastAPI, HTTPException, Request, Response

from vigil_client import Vigil, WebhookVerificationError

SECRET = os.environ["VIGIL_WEBHOOK_SECRET"]
app = FastAPI()
seen: set[str] = set()  # a real receiver keeps delivery ids in its database


@app.post("/hook")
async def hook(request: Request) -> Response:
    # Verify the raw bytes: a re-serialised JSON body would not match the signature.
    body = await request.body()
    try:
        event = Vigil.verify_webhook(body, request.headers, SECRET)
    except WebhookVerificationError:
        raise HTTPException(status_code=400, detail="bad signature") from None
    # Retries and redeliveries repeat the webhook-id: act on each delivery once.
    delivery = request.headers["webhook-id"]
    if delivery not in seen:
        seen.add(delivery)
        if event["type"] in ("bot_detect", "proxy_vpn_detect"):
            data = event["data"]
            print(f"{event['type']}: session {data['sessionId']} scoreBot={data['scoreBot']}")
    return Response(status_code=204)
