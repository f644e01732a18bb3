// Retries, deadlines and the verdict helper, against local fake servers whose timing is exact.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { RateLimitError, TimeoutError, Vigil, VigilError } from "vigil-client";
import { client, newSessionId, projectId } from "./env.mjs";

const PLAN = {
  id: "plan_fake", name: "Fake", description: "", maxRps: 10, maxProjects: 3, maxRequests: 100,
  expiresAt: null, subscribedAt: "2026-01-01T00:00:00.000Z", status: "active", unsubscribedAt: null,
};

/** A server answering each request with `handler(n, req, res)`, n counting from 1. */
async function fake(t, handler) {
  let n = 0;
  const requests = [];
  const server = createServer((req, res) => {
    requests.push({ at: Date.now(), url: req.url, authorization: req.headers.authorization });
    handler(++n, req, res);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { baseUrl: `http://127.0.0.1:${server.address().port}`, requests };
}

const tooMany = (res) =>
  res
    .writeHead(429, {
      "Content-Type": "application/json",
      "Retry-After": "1",
      "RateLimit-Policy": '"burst";q=10;w=1, "monthly";q=100;w=2592000',
      RateLimit: '"burst";r=0;t=1, "monthly";r=50;t=1000',
    })
    .end(JSON.stringify({ message: "Rate limit exceeded" }));

test("a 429 is retried after Retry-After, and the later answer's rate limit is kept", async (t) => {
  const server = await fake(t, (n, _req, res) => {
    if (n === 1) return tooMany(res);
    res
      .writeHead(200, {
        "Content-Type": "application/json",
        "RateLimit-Policy": '"burst";q=10;w=1, "monthly";q=100;w=2592000',
        RateLimit: '"burst";r=9;t=1, "monthly";r=49;t=999',
      })
      .end(JSON.stringify({ data: PLAN }));
  });
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl });
  const plan = await vigil.plan();
  assert.deepEqual(plan, PLAN);
  assert.equal(server.requests.length, 2);
  assert.equal(server.requests[0].url, "/v1/plan");
  assert.equal(server.requests[0].authorization, "Bearer vgl_test");
  const waited = server.requests[1].at - server.requests[0].at;
  assert.ok(waited >= 950, `waited ${waited} ms for Retry-After: 1`);
  // The binding policy (fewest left) is the burst one; both are kept with the raw headers.
  assert.deepEqual(
    { policy: vigil.rateLimit.policy, limit: vigil.rateLimit.limit, remaining: vigil.rateLimit.remaining, reset: vigil.rateLimit.reset },
    { policy: "burst", limit: 10, remaining: 9, reset: 1 },
  );
  assert.deepEqual(vigil.rateLimit.policies[1], { policy: "monthly", limit: 100, window: 2592000, remaining: 49, reset: 999 });
  assert.equal(vigil.rateLimit.raw.rateLimit, '"burst";r=9;t=1, "monthly";r=49;t=999');
});

test("past maxRetries a 429 is a RateLimitError with retryAfter", async (t) => {
  const server = await fake(t, (_n, _req, res) => tooMany(res));
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl, maxRetries: 1 });
  await assert.rejects(vigil.usage(), (err) => {
    assert.ok(err instanceof RateLimitError && err instanceof VigilError);
    assert.equal(err.status, 429);
    assert.equal(err.retryAfter, 1);
    assert.equal(err.message, "Rate limit exceeded");
    assert.equal(err.headers.get("retry-after"), "1");
    return true;
  });
  assert.equal(server.requests.length, 2, "one try and one retry");
  assert.equal(vigil.rateLimit.remaining, 0);
});

test("Link headers are followed exactly as given", async (t) => {
  const server = await fake(t, (n, _req, res) => {
    const link = n === 1 ? { Link: '</v1/results/p/s?cursor=abc%2Fdef&limit=1>; rel="next"' } : {};
    res.writeHead(200, { "Content-Type": "application/json", ...link }).end(
      JSON.stringify({ data: [{ scoreBot: n / 10, scoreProxyVpn: 0, ipAddress: "203.0.113.1", createdAt: "2026-01-01T00:00:00.000Z" }] }),
    );
  });
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl });
  const results = await vigil.results("p", "s", { limit: 1 }).toArray();
  assert.deepEqual(results.map((r) => r.scoreBot), [0.1, 0.2]);
  assert.deepEqual(server.requests.map((r) => r.url), ["/v1/results/p/s?limit=1", "/v1/results/p/s?cursor=abc%2Fdef&limit=1"]);
});

test("timeoutMs bounds a request: a TimeoutError", async (t) => {
  const server = await fake(t, () => {}); // never answers
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl, timeoutMs: 100 });
  await assert.rejects(vigil.plan(), (err) => err instanceof TimeoutError && err.status === 0);
});

test("verdict() returns the fallback when the deadline passes, and throws without one", async (t) => {
  const server = await fake(t, () => {}); // never answers
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl });
  const fallback = { scoreBot: 0, scoreProxyVpn: 0, fallback: true };
  const started = Date.now();
  assert.deepEqual(await vigil.verdict(projectId, "s", { timeoutMs: 50, fallback }), fallback);
  assert.ok(Date.now() - started < 1000, "the deadline is kept");
  await assert.rejects(vigil.verdict(projectId, "s", { timeoutMs: 50 }), TimeoutError);
});

test("verdict() does not take an answer that beat the timer but came after the deadline", async (t) => {
  const server = await fake(t, (_n, _req, res) =>
    res
      .writeHead(200, { "Content-Type": "application/json" })
      .end(JSON.stringify({ data: { scoreBot: 0.5, scoreProxyVpn: 0.1 } })),
  );
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl });
  // A deadline of 0 ms is past before any answer, however fast the server.
  for (let i = 0; i < 5; i++) {
    assert.equal(await vigil.verdict(projectId, "s", { timeoutMs: 0, fallback: "late" }), "late");
  }
  await assert.rejects(vigil.verdict(projectId, "s", { timeoutMs: 0 }), TimeoutError);
  assert.deepEqual(await vigil.verdict(projectId, "s", { timeoutMs: 2000 }), { scoreBot: 0.5, scoreProxyVpn: 0.1 });
});

test("verdict() never outwaits its deadline on a 429's Retry-After", async (t) => {
  const server = await fake(t, (_n, _req, res) => tooMany(res));
  const vigil = new Vigil({ apiKey: "vgl_test", baseUrl: server.baseUrl });
  const started = Date.now();
  assert.equal(await vigil.verdict(projectId, "s", { timeoutMs: 200, fallback: null }), null);
  assert.ok(Date.now() - started < 900);
});

test("verdict() against the real server: the score, or the fallback for a tiny deadline or an unknown session", async () => {
  const vigil = client();
  const sessionId = newSessionId("verdict");
  const event = await vigil.createEvent(projectId, sessionId, { ipAddress: "203.0.113.44", userAgent: "curl/8.5.0" });
  assert.deepEqual(await vigil.verdict(projectId, sessionId, { timeoutMs: 5000 }), {
    scoreBot: event.scoreBot,
    scoreProxyVpn: event.scoreProxyVpn,
  });
  assert.equal(await vigil.verdict(projectId, newSessionId("unknown"), { fallback: "unknown" }), "unknown");
  assert.equal(await vigil.verdict(projectId, sessionId, { timeoutMs: 0, fallback: "late" }), "late");
});
