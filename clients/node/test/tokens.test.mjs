// Session tokens minted by Vigil.sessionToken, judged by the real collect route.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { Vigil } from "vigil-client";
import { client, collect, newSessionId, projectId } from "./env.mjs";

const vigil = client();
const project = await vigil.project(projectId);

test("the token is `${expiry}.${hex HMAC of vigil/${sessionId}:${expiry}}`", () => {
  const before = Math.floor(Date.now() / 1000);
  const token = Vigil.sessionToken("sk_example", "sess-1", 600);
  const [expiry, hex] = token.split(".");
  assert.ok(Number(expiry) >= before + 600 && Number(expiry) <= before + 601);
  assert.equal(hex, createHmac("sha256", "sk_example").update(`vigil/sess-1:${expiry}`).digest("hex"));
  assert.throws(() => Vigil.sessionToken("sk_example", "sess-1", 86_401), RangeError);
  assert.throws(() => Vigil.sessionToken("sk_example", "sess-1", 0), RangeError);
});

test("a minted token is accepted by POST /v1/collect and the visit is stored", async () => {
  assert.equal(project.requireSessionToken, true, "the test project must require tokens");
  const sessionId = newSessionId("token");
  const token = Vigil.sessionToken(project.apiKeyPrivate, sessionId);
  const { status, body } = await collect(project.apiKeyPublic, sessionId, token);
  assert.equal(status, 202, JSON.stringify(body));
  assert.match(body.data.id, /^evt_[A-Za-z0-9]{24}$/);
  const events = await vigil.events(projectId, sessionId).toArray();
  assert.equal(events.length, 1);
});

test("forged, foreign and missing tokens are refused with 401", async () => {
  const sessionId = newSessionId("forged");
  const good = Vigil.sessionToken(project.apiKeyPrivate, sessionId);
  const [expiry, hex] = good.split(".");
  const flipped = `${expiry}.${hex.slice(0, -1)}${hex.endsWith("0") ? "1" : "0"}`;
  const wrongKey = Vigil.sessionToken("sk_not_the_projects_key", sessionId);
  const otherSession = Vigil.sessionToken(project.apiKeyPrivate, `${sessionId}-other`);
  for (const token of [flipped, wrongKey, otherSession, null]) {
    const { status } = await collect(project.apiKeyPublic, sessionId, token);
    assert.equal(status, 401, `token ${token} must be refused`);
  }
  assert.deepEqual(await vigil.events(projectId, sessionId).toArray(), [], "nothing was stored");
});
