// vigil.express() with Vigil stopped, slow or failing, in a real Express app: what a page gets
// (fail open by default, 503 with a message when closed) and how long it waits (the middleware's
// timeoutMs, 2 s by default, for any number of concurrent requests, which share one read).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { test } from "node:test";
import express from "express";
import { ConnectionError, TimeoutError, Vigil } from "vigil-client";

const SLACK_MS = 1500;
const PROJECT = {
  id: "prj_fake", name: "Fake", domain: "shop.example", apiKeyPublic: "pk_fake", apiKeyPrivate: "sk_fake",
  createdAt: "2026-01-01T00:00:00.000Z", requireSessionToken: false, sealedResults: false,
};

/** A port nothing listens on: connections are refused, as with Vigil stopped. */
async function stoppedVigil() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/**
 * A Vigil whose answers `respond(n, res)` writes (n counts requests from 1); by default it
 * answers the project after `delayMs`. `requests` counts what reached it.
 */
async function fakeVigil(t, { delayMs = 0, respond } = {}) {
  const state = { requests: 0, respond };
  const server = createServer((_req, res) => {
    const n = ++state.requests;
    const answer = () => {
      if (res.destroyed) return;
      if (state.respond) return state.respond(n, res);
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ data: PROJECT }));
    };
    if (delayMs > 0) setTimeout(answer, delayMs).unref();
    else answer();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  state.baseUrl = `http://127.0.0.1:${server.address().port}`;
  return state;
}

/** An Express app whose page answers what the middleware left (the error by its class name). */
async function serve(t, middleware) {
  const app = express();
  app.get("/", middleware, (_req, res) => {
    const { error, ...locals } = res.locals.vigil;
    res.json({ ...locals, error: error?.name ?? null });
  });
  app.use((err, _req, res, _next) => res.status(500).json({ error: err.message }));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${server.address().port}/`;
}

/** `count` concurrent page views: their answers (status, body, headers) and the time for all. */
async function views(page, count) {
  const started = Date.now();
  const answers = await Promise.all(
    Array.from({ length: count }, async () => {
      const response = await fetch(page);
      return { status: response.status, headers: response.headers, body: await response.json() };
    }),
  );
  return { answers, elapsed: Date.now() - started };
}

const vigilAt = (baseUrl) => new Vigil({ apiKey: "vgl_test", baseUrl });

test("Vigil stopped: pages are served at once without the keys (fail open, the default)", async (t) => {
  const page = await serve(t, vigilAt(await stoppedVigil()).express({ project: "prj_fake" }));
  const { answers, elapsed } = await views(page, 5);
  for (const { status, body, headers } of answers) {
    assert.equal(status, 200);
    assert.deepEqual(
      { available: body.available, publicKey: body.publicKey, sessionToken: body.sessionToken, error: body.error },
      { available: false, publicKey: null, sessionToken: null, error: "ConnectionError" },
    );
    assert.match(body.sessionId, /^sess_[0-9a-f]{32}$/);
    assert.match(headers.get("set-cookie"), new RegExp(`^vigil_session=${body.sessionId};`), "the visitor's session all the same");
  }
  assert.ok(elapsed < SLACK_MS, `took ${elapsed} ms`);
});

test("Vigil stopped, onError \"closed\": a 503 with a JSON message naming no internal address", async (t) => {
  const base = await stoppedVigil();
  const page = await serve(t, vigilAt(base).express({ project: "prj_fake", onError: "closed" }));
  const started = Date.now();
  const response = await fetch(page);
  assert.ok(Date.now() - started < SLACK_MS);
  assert.equal(response.status, 503);
  assert.match(response.headers.get("content-type"), /^application\/json/);
  assert.equal(response.headers.get("retry-after"), "1");
  const body = await response.json();
  assert.deepEqual(Object.keys(body), ["message"]);
  assert.match(body.message, /unavailable/);
  assert.ok(!body.message.includes(new URL(base).host), "the API's address stays private");
});

test("Vigil slow: 20 concurrent page views wait one default timeout (2 s) in all, over one request to Vigil", async (t) => {
  const slow = await fakeVigil(t, { delayMs: 10_000 });
  const page = await serve(t, vigilAt(slow.baseUrl).express({ project: "prj_fake" }));
  const { answers, elapsed } = await views(page, 20);
  for (const { status, body } of answers) {
    assert.equal(status, 200);
    assert.equal(body.available, false);
    assert.equal(body.error, "TimeoutError");
  }
  assert.ok(elapsed >= 1900 && elapsed < 2000 + SLACK_MS, `20 views took ${elapsed} ms, not about 2000`);
  assert.equal(slow.requests, 1, "one read of the keys for all 20 (single-flight)");
});

test("Vigil slow, onError \"closed\": every concurrent request gets the 503 within timeoutMs", async (t) => {
  const slow = await fakeVigil(t, { delayMs: 10_000 });
  const page = await serve(t, vigilAt(slow.baseUrl).express({ project: "prj_fake", onError: "closed", timeoutMs: 500 }));
  const { answers, elapsed } = await views(page, 10);
  for (const { status, body } of answers) {
    assert.equal(status, 503);
    assert.equal(typeof body.message, "string");
  }
  assert.ok(elapsed >= 450 && elapsed < 500 + SLACK_MS, `took ${elapsed} ms`);
  assert.equal(slow.requests, 1);
});

test("a 429 with a long Retry-After is not waited out past timeoutMs", async (t) => {
  const limited = await fakeVigil(t, {
    respond: (_n, res) =>
      res.writeHead(429, { "Content-Type": "application/json", "Retry-After": "30" }).end('{"message":"Rate limit exceeded"}'),
  });
  const page = await serve(t, vigilAt(limited.baseUrl).express({ project: "prj_fake", timeoutMs: 300 }));
  const { answers, elapsed } = await views(page, 3);
  assert.ok(answers.every((a) => a.status === 200 && a.body.available === false && a.body.error === "TimeoutError"));
  assert.ok(elapsed < 300 + SLACK_MS, `took ${elapsed} ms`);
  assert.equal(limited.requests, 1);
});

test("a failure is kept for retryIntervalMs only: then one new read, and a recovered Vigil's keys are kept", async (t) => {
  const flaky = await fakeVigil(t, {
    respond: (_n, res) => res.writeHead(503, { "Content-Type": "application/json" }).end('{"message":"down"}'),
  });
  const page = await serve(t, vigilAt(flaky.baseUrl).express({ project: "prj_fake", retryIntervalMs: 400 }));
  assert.equal((await (await fetch(page)).json()).available, false);
  assert.equal(flaky.requests, 1);
  // Within the interval: failed at once, without another call.
  const { answers } = await views(page, 5);
  assert.ok(answers.every((a) => a.body.available === false && a.body.error === "VigilError"));
  assert.equal(flaky.requests, 1, "no call during the retry interval");

  await new Promise((resolve) => setTimeout(resolve, 450));
  flaky.respond = undefined; // Vigil is back
  const back = await (await fetch(page)).json();
  assert.equal(back.available, true);
  assert.equal(back.publicKey, "pk_fake");
  const expiry = back.sessionToken.split(".")[0];
  const mac = createHmac("sha256", "sk_fake").update(`vigil/${back.sessionId}:${expiry}`).digest("hex");
  assert.equal(back.sessionToken, `${expiry}.${mac}`);
  assert.equal(flaky.requests, 2);
  await views(page, 5);
  assert.equal(flaky.requests, 2, "the keys are kept once read");
});

test("with publicKey and projectSecret given, no call is made: Vigil down changes nothing", async (t) => {
  const page = await serve(
    t,
    vigilAt(await stoppedVigil()).express({ project: "prj_fake", publicKey: "pk_given", projectSecret: "sk_given", onError: "closed" }),
  );
  const answer = await fetch(page);
  assert.equal(answer.status, 200);
  const body = await answer.json();
  assert.equal(body.available, true);
  assert.equal(body.publicKey, "pk_given");
  const expiry = body.sessionToken.split(".")[0];
  assert.equal(body.sessionToken, `${expiry}.${createHmac("sha256", "sk_given").update(`vigil/${body.sessionId}:${expiry}`).digest("hex")}`);
});

test("an onError function gets the error with res.locals.vigil set, and decides", async (t) => {
  const seen = [];
  const page = await serve(
    t,
    vigilAt(await stoppedVigil()).express({
      project: "prj_fake",
      onError: (err, _req, res, next) => {
        seen.push({ err, locals: res.locals.vigil });
        if (seen.length === 1) return next(); // open, and logged
        res.statusCode = 429;
        res.end("later");
      },
    }),
  );
  assert.equal((await fetch(page)).status, 200);
  const refused = await fetch(page);
  assert.equal(refused.status, 429);
  assert.equal(await refused.text(), "later");
  assert.ok(seen[0].err instanceof ConnectionError);
  assert.equal(seen[0].locals.available, false);
  assert.equal(seen[0].locals.error, seen[0].err);
});

test("a timeout is a TimeoutError, a refused connection a ConnectionError", async (t) => {
  const slow = await fakeVigil(t, { delayMs: 5_000 });
  const errors = [];
  const collectError = (err, _req, _res, next) => {
    errors.push(err);
    next();
  };
  await fetch(await serve(t, vigilAt(slow.baseUrl).express({ project: "p", timeoutMs: 200, onError: collectError })));
  await fetch(await serve(t, vigilAt(await stoppedVigil()).express({ project: "p", onError: collectError })));
  assert.ok(errors[0] instanceof TimeoutError, String(errors[0]));
  assert.ok(errors[1] instanceof ConnectionError && !(errors[1] instanceof TimeoutError), String(errors[1]));
});

test("bad middleware options are refused when the middleware is made, not on a request", () => {
  const vigil = vigilAt("http://127.0.0.1:1");
  assert.throws(() => vigil.express({ project: "" }), TypeError);
  assert.throws(() => vigil.express({ project: "p", onError: "maybe" }), /onError must be/);
  assert.throws(() => vigil.express({ project: "p", timeoutMs: 0 }), /timeoutMs/);
  assert.throws(() => vigil.express({ project: "p", timeoutMs: Number.NaN }), /timeoutMs/);
  assert.throws(() => vigil.express({ project: "p", retryIntervalMs: -1 }), /retryIntervalMs/);
  assert.throws(() => vigil.express({ project: "p", ttlSeconds: 86_401 }), RangeError);
  assert.throws(() => vigil.express({ project: "p", cookie: "a b" }), /cookie/);
});

test("baseUrl: a trailing /v1 or /v1/ is dropped; a URL the client cannot use is refused with why", () => {
  const at = (baseUrl) => new Vigil({ apiKey: "vgl_test", baseUrl }).baseUrl;
  assert.equal(at("https://vigil.example"), "https://vigil.example");
  assert.equal(at("https://vigil.example/"), "https://vigil.example");
  assert.equal(at("https://vigil.example/v1"), "https://vigil.example");
  assert.equal(at("https://vigil.example/v1/"), "https://vigil.example");
  assert.equal(at("https://vigil.example/api/v1"), "https://vigil.example/api");
  assert.equal(at("https://vigil.example/api/"), "https://vigil.example/api");
  assert.equal(at("https://vigil.example/v10"), "https://vigil.example/v10");
  assert.throws(() => at("vigil.example"), /not a URL/);
  assert.throws(() => at("ftp://vigil.example"), /not http\(s\)/);
  assert.throws(() => at("https://vigil.example/v1?x=1"), /query or fragment/);
  assert.throws(() => at("https://vigil.example/#top"), /query or fragment/);
  assert.throws(() => at("https://user:pw@vigil.example"), /credentials/);
});

test("vigil.openSealed: 10 concurrent checkouts wait one 2 s deadline for keys it does not hold, over one request", async (t) => {
  const slow = await fakeVigil(t, { delayMs: 10_000 });
  const vigil = vigilAt(slow.baseUrl);
  const started = Date.now();
  const outcomes = await Promise.allSettled(
    Array.from({ length: 10 }, () => vigil.openSealed("prj_fake", "a.b.c.d.e", { sessionId: "sess_a" })),
  );
  const elapsed = Date.now() - started;
  for (const outcome of outcomes) {
    assert.equal(outcome.status, "rejected");
    assert.ok(outcome.reason instanceof TimeoutError, String(outcome.reason));
  }
  assert.ok(elapsed >= 1900 && elapsed < 2000 + SLACK_MS, `took ${elapsed} ms`);
  assert.equal(slow.requests, 1, "one read of the keys for all");
  // A caller's own signal ends its own wait only.
  const quick = await fakeVigil(t, { delayMs: 10_000 });
  const aborted = Date.now();
  await assert.rejects(
    vigilAt(quick.baseUrl).openSealed("prj_fake", "a.b.c.d.e", { sessionId: "s" }, { signal: AbortSignal.timeout(100), timeoutMs: 5000 }),
    TimeoutError,
  );
  assert.ok(Date.now() - aborted < 1000);
});
