// vigil.express() in a real Express app: the cookie, res.locals.vigil, and a token the API takes.
import assert from "node:assert/strict";
import { test } from "node:test";
import express from "express";
import { baseUrl, client, collect, projectId } from "./env.mjs";

const vigil = client();
const project = await vigil.project(projectId);

/** Serves `middleware` on a random loopback port; the page answers res.locals.vigil as JSON. */
async function serve(t, middleware) {
  const app = express();
  app.get("/", middleware, (_req, res) => res.json(res.locals.vigil));
  app.use((err, _req, res, _next) => res.status(500).json({ error: err.message }));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  t.after(() => server.close());
  return `http://127.0.0.1:${server.address().port}/`;
}

test("a new visitor gets a session cookie and a token the collect route accepts", async (t) => {
  const page = await serve(t, vigil.express({ project: projectId }));

  const first = await fetch(page);
  assert.equal(first.status, 200);
  const locals = await first.json();
  const setCookie = first.headers.get("set-cookie");
  assert.match(setCookie, /^vigil_session=([^;]+); Path=\/; HttpOnly; SameSite=Lax$/);
  assert.equal(setCookie.split(";")[0], `vigil_session=${locals.sessionId}`);
  assert.equal(locals.available, true);
  assert.equal(locals.projectId, projectId);
  assert.equal(locals.publicKey, project.apiKeyPublic);
  assert.match(locals.sessionToken, /^\d+\.[0-9a-f]{64}$/);

  const { status } = await collect(locals.publicKey, locals.sessionId, locals.sessionToken);
  assert.equal(status, 202);
  assert.equal((await vigil.events(projectId, locals.sessionId).toArray()).length, 1);

  // The cookie brings the visitor back to the same session, without a new cookie.
  const again = await fetch(page, { headers: { Cookie: `other=1; vigil_session=${locals.sessionId}` } });
  const localsAgain = await again.json();
  assert.equal(again.headers.get("set-cookie"), null);
  assert.equal(localsAgain.sessionId, locals.sessionId);
  assert.equal((await collect(localsAgain.publicKey, localsAgain.sessionId, localsAgain.sessionToken)).status, 202);
});

test("a cookie that is no valid session id starts a new session", async (t) => {
  const page = await serve(t, vigil.express({ project: projectId, cookie: "sid" }));
  const answer = await fetch(page, { headers: { Cookie: "sid=../../etc" } });
  const locals = await answer.json();
  assert.notEqual(locals.sessionId, "../../etc");
  assert.match(answer.headers.get("set-cookie"), new RegExp(`^sid=${locals.sessionId};`));
});

test("projectSecret is what the middleware signs with", async (t) => {
  const page = await serve(t, vigil.express({ project: projectId, projectSecret: "sk_not_the_projects_key" }));
  const locals = await (await fetch(page)).json();
  assert.equal(locals.publicKey, project.apiKeyPublic);
  assert.equal((await collect(locals.publicKey, locals.sessionId, locals.sessionToken)).status, 401);
});

test("an unknown project fails open by default, and reaches the app's error handler when asked", async (t) => {
  // The default: the page is served, without the keys, and says why.
  const open = await fetch(await serve(t, vigil.express({ project: "prj_does_not_exist" })));
  assert.equal(open.status, 200);
  const locals = await open.json();
  assert.equal(locals.available, false);
  assert.equal(locals.publicKey, null);
  assert.equal(locals.sessionToken, null);
  assert.match(locals.sessionId, /^sess_[0-9a-f]{32}$/);

  const page = await serve(
    t,
    vigil.express({ project: "prj_does_not_exist", onError: (err, _req, _res, next) => next(err) }),
  );
  const answer = await fetch(page);
  assert.equal(answer.status, 500);
  assert.match((await answer.json()).error, /not found/i);
});

test("a baseUrl with /v1 (the API reference's base) works like the origin", async (t) => {
  for (const suffix of ["/v1", "/v1/", "/"]) {
    const withVersion = client({ baseUrl: `${baseUrl}${suffix}` });
    assert.equal(withVersion.baseUrl, baseUrl);
    assert.equal((await withVersion.project(projectId)).id, projectId);
  }
  const page = await serve(t, client({ baseUrl: `${baseUrl}/v1` }).express({ project: projectId }));
  const locals = await (await fetch(page)).json();
  assert.equal(locals.available, true);
  assert.equal(locals.publicKey, project.apiKeyPublic);
});
