// Receives Vigil's webhook deliveries and verifies them before trusting a byte of them.
//
//   VIGIL_WEBHOOK_SECRET=whsec_... npx tsx examples/webhook-receiver.ts
// (the secret from GET /v1/projects/{projectId}/webhooks/{webhookId}/secret, or
// vigil.webhookSecret(projectId, webhookId); legacy receivers pass the project's apiKeyPrivate)
import express from "express";
import { Vigil, WebhookVerificationError } from "vigil-client";

const secret = process.env.VIGIL_WEBHOOK_SECRET;
if (!secret) throw new Error("set VIGIL_WEBHOOK_SECRET");
const app = express();

// The signature covers the body's exact bytes: read it as text, never as parsed JSON.
app.post("/vigil", express.text({ type: "application/json" }), (req, res) => {
  try {
    const event = Vigil.verifyWebhook(req.body as string, req.headers, secret);
    if (event.type === "webhook.test") {
      console.log("test delivery for webhook", event.data.webhookId);
    } else {
      console.log(event.type, event.data.sessionId, event.data.scoreBot, event.data.scoreProxyVpn);
    }
    res.sendStatus(204);
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    res.sendStatus(400); // forged, tampered or replayed long after: not from Vigil
  }
});

app.listen(Number(process.env.PORT ?? 3002));
