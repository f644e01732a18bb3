// Sealed verdicts: the collect route's `sealed` JWE, opened with Vigil.openSealed and
// vigil.openSealed against the real server's keys.
import assert from "node:assert/strict";
import { createCipheriv, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { NotFoundError, SealedVerdictError, Vigil } from "vigil-client";
import { baseUrl, client, collect, newSessionId, projectId } from "./env.mjs";

const vigil = client();
const origin = `http://localhost:${new URL(baseUrl).port}`;
const project = await vigil.project(projectId);

// Calls to the sealing-key route, counted at fetch, to see what the instance method caches.
let keyReads = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  if (/\/sealing-key$/.test(new URL(url).pathname) && (init?.method ?? "GET") === "GET") keyReads++;
  return realFetch(input, init);
};

before(async () => {
  const on = await vigil.updateProject(projectId, { sealedResults: true });
  assert.equal(on.sealedResults, true);
});

// Other test files see the demo project as it was.
after(async () => {
  await vigil.updateProject(projectId, { sealedResults: false });
  globalThis.fetch = realFetch;
});

/** A visit through the collect route as the page makes it: its receipt and sealed verdict. */
async function visit(label) {
  const sessionId = newSessionId(label);
  const { status, body } = await collect(project.apiKeyPublic, sessionId, Vigil.sessionToken(project.apiKeyPrivate, sessionId));
  assert.equal(status, 202, JSON.stringify(body));
  assert.match(body.data.id, /^evt_[A-Za-z0-9]{24}$/);
  assert.equal(typeof body.data.sealed, "string", "a sealing project's visit answers `sealed`");
  return { sessionId, sealed: body.data.sealed };
}

/** Seals `claims` as Vigil does (JWE compact, dir + A256GCM, AAD = the encoded header). */
function seal(claims, { kid, k }) {
  const header = Buffer.from(JSON.stringify({ alg: "dir", enc: "A256GCM", kid })).toString("base64url");
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", Buffer.from(k, "base64url"), iv);
  cipher.setAAD(Buffer.from(header, "ascii"));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(claims), "utf8"), cipher.final()]);
  return [header, "", iv, ciphertext, cipher.getAuthTag()].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
}

/** `sealed` with one character of its ciphertext segment changed (mid-segment: every bit counts). */
function tamper(sealed) {
  const parts = sealed.split(".");
  const c = parts[3];
  const i = Math.floor(c.length / 2);
  parts[3] = c.slice(0, i) + (c[i] === "A" ? "B" : "A") + c.slice(i + 1);
  assert.notEqual(parts.join("."), sealed);
  return parts.join(".");
}

const refused = (reason) => (err) => {
  assert.ok(err instanceof SealedVerdictError, `a SealedVerdictError, not ${err}`);
  assert.equal(err.reason, reason, err.message);
  assert.ok(err.message.length > 0);
  return true;
};

test("a sealed verdict opens with the project's keys and says what the session's event says", async () => {
  const keys = await vigil.sealingKey(projectId);
  assert.equal(keys.sealedResults, true);
  assert.ok(keys.keys.length >= 1);
  const [current] = keys.keys;
  assert.deepEqual(
    { kty: current.kty, alg: current.alg, enc: current.enc, use: current.use, expiresAt: current.expiresAt },
    { kty: "oct", alg: "dir", enc: "A256GCM", use: "enc", expiresAt: null },
  );
  assert.match(current.kid, /^seal_[A-Za-z0-9]{12}$/);
  assert.equal(Buffer.from(current.k, "base64url").length, 32);

  const { sessionId, sealed } = await visit("sealed");
  const [header, encryptedKey] = sealed.split(".");
  assert.equal(encryptedKey, "", "alg dir: no encrypted key");
  assert.deepEqual(JSON.parse(Buffer.from(header, "base64url")), { alg: "dir", enc: "A256GCM", kid: current.kid });

  const verdict = Vigil.openSealed(sealed, keys.keys, { sessionId, projectId, origin });
  assert.deepEqual(Vigil.openSealed(sealed, keys, { sessionId, projectId }), verdict, "the whole answer works as the key set too");

  const [event] = await vigil.events(projectId, sessionId).toArray();
  assert.deepEqual(verdict, {
    eventId: event.id,
    sessionId,
    projectId,
    scoreBot: event.scoreBot,
    scoreProxyVpn: event.scoreProxyVpn,
    reasons: event.reasons.map((r) => r.code),
    device: event.device,
    agent: event.agent?.status ?? null,
    createdAt: event.createdAt,
    origin,
    iat: verdict.iat,
    exp: verdict.exp,
  });
  const now = Date.now() / 1000;
  assert.ok(Math.abs(verdict.iat - now) < 60, "issued just now");
  assert.ok(verdict.exp > now && verdict.exp - verdict.iat <= 600, "valid for at most 10 minutes");

  // The instance method reads the keys once and keeps them.
  const reads = keyReads;
  const fresh = client();
  assert.deepEqual(await fresh.openSealed(projectId, sealed, { sessionId, origin }), verdict);
  assert.deepEqual(await fresh.openSealed(projectId, sealed, { sessionId }), verdict);
  assert.equal(keyReads - reads, 1, "one read of the keys for two verdicts");
  await assert.rejects(fresh.openSealed("prj_does_not_exist", sealed, { sessionId }), NotFoundError);
});

test("changed, foreign, expired and other sessions' verdicts are refused", async () => {
  const keys = await vigil.sealingKey(projectId);
  const { sessionId, sealed } = await visit("refused");
  const claims = Vigil.openSealed(sealed, keys, { sessionId, projectId, origin });

  // One character of the ciphertext changed: it no longer authenticates.
  assert.throws(() => Vigil.openSealed(tamper(sealed), keys, { sessionId, projectId, origin }), refused("unauthentic"));
  const parts = sealed.split(".");
  const otherTag = [...parts.slice(0, 4), randomBytes(16).toString("base64url")].join(".");
  assert.throws(() => Vigil.openSealed(otherTag, keys, { sessionId, projectId }), refused("unauthentic"));
  await assert.rejects(vigil.openSealed(projectId, tamper(sealed), { sessionId }), refused("unauthentic"));

  // Another key set: the same kid with other bytes, or none of its kid.
  const impostor = keys.keys.map((k) => ({ ...k, k: randomBytes(32).toString("base64url") }));
  assert.throws(() => Vigil.openSealed(sealed, impostor, { sessionId, projectId }), refused("unauthentic"));
  const foreign = [{ ...keys.keys[0], kid: "seal_AAAAAAAAAAAA", k: randomBytes(32).toString("base64url") }];
  assert.throws(() => Vigil.openSealed(sealed, foreign, { sessionId, projectId }), refused("unknown_key"));
  assert.throws(() => Vigil.openSealed(sealed, [], { sessionId, projectId }), refused("unknown_key"));

  // Authentic, but not the verdict this request expects.
  assert.throws(() => Vigil.openSealed(sealed, keys, { sessionId: `${sessionId}-other`, projectId, origin }), refused("mismatch"));
  assert.throws(() => Vigil.openSealed(sealed, keys, { sessionId, projectId, origin: "https://evil.example" }), refused("mismatch"));
  await assert.rejects(vigil.openSealed(projectId, sealed, { sessionId: "someone-else" }), refused("mismatch"));

  // Our own sealing with the API's key opens (the format is the one the server uses), until exp.
  const now = Math.floor(Date.now() / 1000);
  const resealed = seal({ ...claims, iat: now, exp: now + 300 }, keys.keys[0]);
  assert.deepEqual(Vigil.openSealed(resealed, keys, { sessionId, projectId, origin }), { ...claims, iat: now, exp: now + 300 });
  const expired = seal({ ...claims, iat: now - 700, exp: now - 100 }, keys.keys[0]);
  assert.throws(() => Vigil.openSealed(expired, keys, { sessionId, projectId, origin }), refused("expired"));
  await assert.rejects(vigil.openSealed(projectId, expired, { sessionId }), refused("expired"));
  const tooLong = seal({ ...claims, iat: now, exp: now + 3600 }, keys.keys[0]);
  assert.throws(() => Vigil.openSealed(tooLong, keys, { sessionId, projectId }), refused("malformed"));

  // Not a dir/A256GCM compact JWE at all.
  const none = `${Buffer.from(JSON.stringify({ alg: "none", kid: keys.keys[0].kid })).toString("base64url")}..${parts.slice(2).join(".")}`;
  assert.throws(() => Vigil.openSealed(none, keys, { sessionId, projectId }), refused("malformed"));
  assert.throws(() => Vigil.openSealed("not.a.jwe", keys, { sessionId, projectId }), refused("malformed"));
  assert.throws(() => Vigil.openSealed(`${parts[0]}.AAAA.${parts.slice(2).join(".")}`, keys, { sessionId, projectId }), refused("malformed"));
});

test("after a rotation, earlier verdicts still open with the listed keys; an unlisted kid is refused", async () => {
  const before = await vigil.sealingKey(projectId);
  const { sessionId, sealed: older } = await visit("rotation");
  const opener = client();
  assert.equal((await opener.openSealed(projectId, older, { sessionId })).sessionId, sessionId);
  const readAt = Date.now();

  // Rotated by another client: `opener` still holds the keys from before.
  const rotated = await client().rotateSealingKey(projectId);
  assert.equal(rotated.sealedResults, true);
  assert.notEqual(rotated.keys[0].kid, before.keys[0].kid, "a new key seals now");
  assert.equal(rotated.keys[0].expiresAt, null);
  const replaced = rotated.keys.find((k) => k.kid === before.keys[0].kid);
  assert.ok(replaced, "the replaced key stays listed for the overlap");
  assert.ok(Date.parse(replaced.expiresAt) > Date.now(), "until the overlap ends");
  assert.deepEqual(await vigil.sealingKey(projectId), rotated);

  // The verdict sealed before the rotation opens with the keys now listed ...
  assert.equal(Vigil.openSealed(older, rotated, { sessionId, projectId, origin }).sessionId, sessionId);
  // ... and once the replaced key is no longer listed (after the overlap), it is refused.
  const currentOnly = rotated.keys.filter((k) => k.expiresAt === null);
  assert.throws(() => Vigil.openSealed(older, currentOnly, { sessionId, projectId, origin }), refused("unknown_key"));

  // A verdict sealed after the rotation carries the new kid; the instance reads the keys again.
  const { sessionId: newer, sealed: fresh } = await visit("rotated");
  assert.equal(JSON.parse(Buffer.from(fresh.split(".")[0], "base64url")).kid, rotated.keys[0].kid);
  assert.throws(() => Vigil.openSealed(fresh, before, { sessionId: newer, projectId }), refused("unknown_key"));
  await new Promise((r) => setTimeout(r, Math.max(0, 1100 - (Date.now() - readAt))));
  const reads = keyReads;
  assert.equal((await opener.openSealed(projectId, fresh, { sessionId: newer, origin })).sessionId, newer);
  assert.equal((await opener.openSealed(projectId, older, { sessionId, origin })).sessionId, sessionId);
  assert.equal(keyReads - reads, 1, "one more read of the keys, after the unknown kid");

  // A kid the project never had: refused, and not read for again within the second.
  const forged = seal({ sessionId }, { kid: "seal_000000000000", k: randomBytes(32).toString("base64url") });
  await assert.rejects(opener.openSealed(projectId, forged, { sessionId }), refused("unknown_key"));
  await assert.rejects(opener.openSealed(projectId, forged, { sessionId }), refused("unknown_key"));
  assert.equal(keyReads - reads, 1, "forged kids do not make the client read the keys every time");
});

test("with sealing turned off, the collect route answers no `sealed`", async () => {
  const off = await vigil.updateProject(projectId, { sealedResults: false });
  assert.equal(off.sealedResults, false);
  const sessionId = newSessionId("unsealed");
  const { status, body } = await collect(project.apiKeyPublic, sessionId, Vigil.sessionToken(project.apiKeyPrivate, sessionId));
  assert.equal(status, 202, JSON.stringify(body));
  assert.equal(body.data.sealed, undefined);
  assert.equal((await vigil.sealingKey(projectId)).sealedResults, false);
});
