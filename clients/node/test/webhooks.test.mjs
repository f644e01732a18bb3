// A real delivery from the server to a local receiver, verified with Vigil.verifyWebhook.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { ConflictError, NotFoundError, Vigil, WebhookVerificationError } from "vigil-client";
import { client, projectId } from "./env.mjs";

const vigil = client();

/** An HTTP receiver on a free loopback port that keeps each delivery's raw body and headers. */
async function startReceiver() {
  const deliveries = [];
  const waiters = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      deliveries.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  /** Resolves once `count` deliveries arrived, or rejects after `ms`. */
  const waitFor = async (count, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (deliveries.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} deliveries within ${ms} ms, got ${deliveries.length}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
    return deliveries[count - 1];
  };
  return { port: server.address().port, deliveries, waitFor, close: () => server.close() };
}

test("a test delivery verifies with the webhook's secret; tampering is caught", async (t) => {
  const receiver = await startReceiver();
  t.after(receiver.close);
  const url = `http://127.0.0.1:${receiver.port}/hook`;

  const { id: webhookId } = await vigil.createWebhook(projectId, { type: "bot_detect", url });
  t.after(async () => {
    await vigil.deleteWebhook(projectId, webhookId);
    assert.ok(!(await vigil.webhooks(projectId)).some((w) => w.id === webhookId), "deleted");
    await assert.rejects(vigil.webhookSecret(projectId, webhookId), NotFoundError);
  });

  const listed = (await vigil.webhooks(projectId)).find((w) => w.id === webhookId);
  assert.deepEqual({ type: listed.type, url: listed.url }, { type: "bot_detect", url });
  await assert.rejects(vigil.createWebhook(projectId, { type: "bot_detect", url }), ConflictError);

  const secret = await vigil.webhookSecret(projectId, webhookId);
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);

  const { deliveryId } = await vigil.testWebhook(projectId, webhookId);
  const delivery = await receiver.waitFor(1);
  assert.equal(delivery.path, "/hook");
  assert.equal(delivery.headers["webhook-id"], deliveryId);

  // Node's own header object (lower-case names), as an Express or http handler gets it.
  const event = Vigil.verifyWebhook(delivery.body, delivery.headers, secret);
  assert.equal(event.type, "webhook.test");
  assert.deepEqual(event.data, { projectId, webhookId });

  // A fetch Headers instance, and a plain object with other casing, verify the same.
  const headers = new Headers(Object.entries(delivery.headers).filter(([, v]) => typeof v === "string"));
  assert.deepEqual(Vigil.verifyWebhook(Buffer.from(delivery.body), headers, secret), event);
  const shouted = Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k.toUpperCase(), v]));
  assert.deepEqual(Vigil.verifyWebhook(delivery.body, shouted, secret), event);

  // Legacy receivers verify with the project's apiKeyPrivate as raw bytes while the project
  // keeps the legacy signature on.
  const project = await vigil.project(projectId);
  if (project.webhookLegacySignature) {
    assert.deepEqual(Vigil.verifyWebhook(delivery.body, delivery.headers, project.apiKeyPrivate), event);
  }

  const tampered = delivery.body.replace(webhookId, `${webhookId}x`);
  assert.notEqual(tampered, delivery.body);
  assert.throws(() => Vigil.verifyWebhook(tampered, delivery.headers, secret), WebhookVerificationError);
  assert.throws(
    () => Vigil.verifyWebhook(delivery.body, delivery.headers, "whsec_" + Buffer.alloc(24, 7).toString("base64")),
    WebhookVerificationError,
  );
  assert.throws(() => Vigil.verifyWebhook(delivery.body, delivery.headers, "sk_not_the_key"), WebhookVerificationError);
  const { "webhook-signature": _dropped, ...unsigned } = delivery.headers;
  assert.throws(() => Vigil.verifyWebhook(delivery.body, unsigned, secret), WebhookVerificationError);

  // The delivery log records it (the log is written after the receiver answered: poll briefly).
  let logged;
  for (let i = 0; i < 20 && logged?.status !== "delivered"; i++) {
    logged = (await vigil.deliveries(projectId, webhookId)).find((d) => d.id === deliveryId);
    if (logged?.status !== "delivered") await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(logged?.status, "delivered");
  assert.equal(logged.lastStatusCode, 204);

  // A redelivery is the same message again: same webhook-id, same body, still verifying.
  await vigil.redeliver(projectId, deliveryId);
  const repeat = await receiver.waitFor(2);
  assert.equal(repeat.headers["webhook-id"], delivery.headers["webhook-id"]);
  assert.equal(repeat.body, delivery.body);
  assert.deepEqual(Vigil.verifyWebhook(repeat.body, repeat.headers, secret), event);

  // Rotation answers a new secret, which the secret route then gives.
  const rotated = await vigil.rotateWebhookSecret(projectId, webhookId);
  assert.match(rotated, /^whsec_/);
  assert.notEqual(rotated, secret);
  assert.equal(await vigil.webhookSecret(projectId, webhookId), rotated);
});
