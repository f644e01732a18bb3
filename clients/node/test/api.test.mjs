// The developer API through the client against a real `vigil serve`.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AuthenticationError,
  NotFoundError,
  ValidationError,
  ConnectionError,
  VigilError,
  Vigil,
} from "vigil-client";
import { apiKey, baseUrl, client, newSessionId, projectId } from "./env.mjs";

const vigil = client();

test("plan, usage and projects read the account", async () => {
  const plan = await vigil.plan();
  assert.match(plan.id, /^plan_/);
  assert.equal(typeof plan.maxRps, "number");
  assert.ok(["trialing", "active", "past_due", "canceled", "unpaid", "paused"].includes(plan.status));

  const usage = await vigil.usage();
  assert.equal(usage.maxRequests, plan.maxRequests);
  assert.ok(usage.requests >= 1);

  const projects = await vigil.projects();
  assert.ok(projects.some((p) => p.id === projectId), "the test project is listed");
});

test("project() answers the project and its keys; rate-limit headers are exposed", async () => {
  const project = await vigil.project(projectId);
  assert.equal(project.id, projectId);
  assert.match(project.apiKeyPublic, /^pk_/);
  assert.match(project.apiKeyPrivate, /^sk_/);
  assert.equal(typeof project.requireSessionToken, "boolean");

  // The last answer's RateLimit / RateLimit-Policy, parsed and raw.
  const rl = vigil.rateLimit;
  assert.ok(rl, "rateLimit is set after an authenticated call");
  assert.match(rl.raw.policy, /"burst";q=\d+;w=1/);
  assert.match(rl.raw.rateLimit, /"burst";r=\d+;t=\d+/);
  const burst = rl.policies.find((p) => p.policy === "burst");
  const plan = await vigil.plan();
  assert.equal(burst.limit, plan.maxRps);
  assert.equal(burst.window, 1);
  assert.ok(burst.remaining >= 0 && burst.remaining <= plan.maxRps);
  assert.ok(rl.policies.some((p) => p.policy === "monthly" && p.limit === plan.maxRequests));
  assert.equal(typeof rl.remaining, "number");
});

test("createEvent evaluates a visitor's evidence; results() walks every page", async () => {
  const sessionId = newSessionId("pages");
  const visits = [
    { ipAddress: "203.0.113.10", userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36" },
    { ipAddress: "203.0.113.11", userAgent: "curl/8.5.0" },
    { ipAddress: "185.220.101.1", userAgent: "python-requests/2.32.3" },
    { ipAddress: "203.0.113.12", userAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Gecko/20100101 Firefox/128.0" },
    { ipAddress: "203.0.113.13", userAgent: "Wget/1.21.4" },
  ];
  const created = [];
  for (const visit of visits) {
    const event = await vigil.createEvent(projectId, sessionId, visit);
    assert.equal(event.sessionId, sessionId);
    assert.equal(event.ipAddress, visit.ipAddress);
    assert.match(event.id, /^evt_\d+_\d+$/);
    assert.ok(event.scoreBot >= 0 && event.scoreBot <= 1);
    assert.ok(Array.isArray(event.reasons));
    created.push(event);
  }
  // An HTTP library's user agent is a bot by its own say-so.
  assert.ok(created[1].scoreBot > created[0].scoreBot, "curl scores higher than a browser");
  assert.ok(created[1].reasons.some((r) => r.score === "bot"));

  // Page size 2 over 5 results: three pages, every result once, newest first.
  const pages = [];
  for await (const page of vigil.results(projectId, sessionId, { limit: 2 }).pages()) pages.push(page);
  assert.deepEqual(pages.map((p) => p.length), [2, 2, 1]);

  const results = [];
  for await (const result of vigil.results(projectId, sessionId, { limit: 2 })) results.push(result);
  assert.equal(results.length, visits.length);
  assert.deepEqual(
    results.map((r) => r.ipAddress).sort(),
    visits.map((v) => v.ipAddress).sort(),
  );
  const times = results.map((r) => r.createdAt);
  assert.deepEqual(times, [...times].sort().reverse(), "newest first");

  // The overall score is the maximum over the results.
  const score = await vigil.sessionScore(projectId, sessionId);
  assert.equal(score.scoreBot, Math.max(...results.map((r) => r.scoreBot)));
  assert.equal(score.scoreProxyVpn, Math.max(...results.map((r) => r.scoreProxyVpn)));

  // Events page the same way, and one reads back by id.
  const events = await vigil.events(projectId, sessionId, { limit: 2 }).toArray();
  assert.deepEqual(events.map((e) => e.id).sort(), created.map((e) => e.id).sort());
  const one = await vigil.event(projectId, sessionId, created[2].id);
  assert.deepEqual(one, created[2]);

  // The session shows in the project's sessions list with its event count.
  let summary;
  for await (const s of vigil.sessions(projectId, { limit: 50 })) {
    if (s.sessionId === sessionId) {
      summary = s;
      break;
    }
  }
  assert.ok(summary, "the session is listed");
  assert.equal(summary.events, visits.length);
  assert.equal(summary.scoreBot, score.scoreBot);

  // The statistics count the visits of the current hour.
  const stats = await vigil.stats(projectId, { granularity: "hour" });
  assert.ok(stats.length >= 1);
  assert.ok(stats.reduce((n, b) => n + b.visits, 0) >= visits.length);
});

test("an empty session's results iterate as nothing (the API answers data: null)", async () => {
  assert.deepEqual(await vigil.results(projectId, newSessionId("empty")).toArray(), []);
});

test("an Idempotency-Key makes createEvent write once", async () => {
  const sessionId = newSessionId("idem");
  const key = `key-${sessionId}`;
  const first = await vigil.createEvent(projectId, sessionId, { ipAddress: "198.51.100.7" }, { idempotencyKey: key });
  const again = await vigil.createEvent(projectId, sessionId, { ipAddress: "198.51.100.7" }, { idempotencyKey: key });
  assert.equal(again.id, first.id);
  assert.equal((await vigil.events(projectId, sessionId).toArray()).length, 1);
  // The same key with another body is refused (422, a ValidationError).
  await assert.rejects(
    vigil.createEvent(projectId, sessionId, { ipAddress: "198.51.100.8" }, { idempotencyKey: key }),
    (err) => err instanceof ValidationError && err.status === 422,
  );
});

test("a wrong developer key is an AuthenticationError", async () => {
  const wrong = new Vigil({ apiKey: "vgl_live_wrongwrongwrongwrongwrongwrong", baseUrl });
  await assert.rejects(wrong.plan(), (err) => {
    assert.ok(err instanceof AuthenticationError);
    assert.ok(err instanceof VigilError);
    assert.equal(err.status, 401);
    assert.ok(err.message.length > 0);
    assert.ok(err.headers instanceof Headers);
    return true;
  });
});

test("an unknown project is a NotFoundError with the API's message", async () => {
  await assert.rejects(vigil.project("prj_does_not_exist"), (err) => {
    assert.ok(err instanceof NotFoundError);
    assert.equal(err.status, 404);
    assert.match(err.message, /not found/i);
    return true;
  });
  await assert.rejects(vigil.sessionScore(projectId, newSessionId("none")), NotFoundError);
});

test("a bad body is a ValidationError naming the problem", async () => {
  await assert.rejects(
    vigil.createEvent(projectId, newSessionId("bad"), { ipAddress: "203.0.113.1", screen: 1080 }),
    (err) => err instanceof ValidationError && err.status === 400 && /screen/.test(err.message),
  );
  await assert.rejects(
    vigil.createEvent(projectId, newSessionId("bad"), { ipAddress: "not an address" }),
    (err) => err instanceof ValidationError && err.status === 400,
  );
  await assert.rejects(vigil.updateProject(projectId, {}), ValidationError);
});

test("updateProject changes a project and answers it as changed", async () => {
  const before = await vigil.project(projectId);
  const renamed = await vigil.updateProject(projectId, { name: `${before.name} (renamed)` });
  try {
    assert.equal(renamed.name, `${before.name} (renamed)`);
    assert.equal((await vigil.project(projectId)).name, renamed.name);
  } finally {
    await vigil.updateProject(projectId, { name: before.name });
  }
});

test("no server listening is a ConnectionError (status 0), not a raw fetch error", async () => {
  const nowhere = new Vigil({ apiKey, baseUrl: "http://127.0.0.1:9", maxRetries: 0 });
  await assert.rejects(nowhere.plan(), (err) => err instanceof ConnectionError && err.status === 0);
});

test("createProject makes a project once per Idempotency-Key (or is refused at the plan's limit)", async () => {
  const [plan, projects] = await Promise.all([vigil.plan(), vigil.projects()]);
  const key = `create-${newSessionId("project")}`;
  const create = () => vigil.createProject({ name: "SDK test", domain: "sdk-test.example" }, { idempotencyKey: key });
  if (projects.length >= plan.maxProjects) {
    await assert.rejects(create(), (err) => err instanceof VigilError && err.status === 403);
    return;
  }
  const created = await create();
  assert.match(created.id, /^prj_/);
  assert.equal(created.domain, "sdk-test.example");
  assert.equal(created.requireSessionToken, true, "projects made through the API require tokens");
  const again = await create();
  assert.equal(again.id, created.id);
  assert.deepEqual(await vigil.project(created.id), created);
});
