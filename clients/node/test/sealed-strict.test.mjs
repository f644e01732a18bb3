// Vigil.openSealed offline, with a key of our own: `expect` is required (the session and the
// project), and every base64url segment must be exactly what an encoder writes.
import assert from "node:assert/strict";
import { createCipheriv, randomBytes } from "node:crypto";
import { test } from "node:test";
import { SealedVerdictError, Vigil } from "vigil-client";

const key = { kty: "oct", kid: "seal_TESTTESTTEST", k: randomBytes(32).toString("base64url") };
const now = Math.floor(Date.now() / 1000);
const claims = {
  eventId: "evt_1", sessionId: "sess_a", projectId: "prj_a", scoreBot: 0.1, scoreProxyVpn: 0, reasons: [],
  device: null, agent: null, createdAt: "2026-01-01T00:00:00.000Z", origin: "https://shop.example",
  iat: now, exp: now + 300,
};
const expect = { sessionId: "sess_a", projectId: "prj_a" };

function seal(payload) {
  const header = Buffer.from(JSON.stringify({ alg: "dir", enc: "A256GCM", kid: key.kid })).toString("base64url");
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", Buffer.from(key.k, "base64url"), iv);
  cipher.setAAD(Buffer.from(header, "ascii"));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), "utf8"), cipher.final()]);
  return [header, "", iv.toString("base64url"), ciphertext.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(".");
}

const sealed = seal(claims);
const malformed = (err) => err instanceof SealedVerdictError && err.reason === "malformed";
const withPart = (i, f) => sealed.split(".").map((p, j) => (j === i ? f(p) : p)).join(".");

/** The same last character's value with its unused low bits set: decodes to the same bytes. */
function nonCanonical(part) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const unused = { 2: 4, 3: 2 }[part.length % 4];
  assert.ok(unused, "a segment with spare bits in its last character");
  const last = alphabet.indexOf(part.at(-1));
  const changed = part.slice(0, -1) + alphabet[last | ((1 << unused) - 1)];
  assert.notEqual(changed, part);
  assert.deepEqual(Buffer.from(changed, "base64url"), Buffer.from(part, "base64url"), "a lax decoder reads the same bytes");
  return changed;
}

test("openSealed without expect, or without the session or the project, is a TypeError", async () => {
  assert.deepEqual(Vigil.openSealed(sealed, [key], expect), claims);
  assert.throws(() => Vigil.openSealed(sealed, [key]), TypeError);
  assert.throws(() => Vigil.openSealed(sealed, [key], undefined), /expect: \{ sessionId, projectId \}/);
  assert.throws(() => Vigil.openSealed(sealed, [key], {}), TypeError);
  assert.throws(() => Vigil.openSealed(sealed, [key], { sessionId: "sess_a" }), /projectId is missing/);
  assert.throws(() => Vigil.openSealed(sealed, [key], { projectId: "prj_a" }), /sessionId is missing/);
  assert.throws(() => Vigil.openSealed(sealed, [key], { sessionId: "", projectId: "prj_a" }), TypeError);
  assert.throws(() => Vigil.openSealed(sealed, [key], { ...expect, sessionID: "sess_a" }), /cannot expect "sessionID"/);
  // The instance method needs the session (the project is its first argument), before any call.
  const offline = new Vigil({ apiKey: "vgl_test", baseUrl: "http://127.0.0.1:1" });
  await assert.rejects(offline.openSealed("prj_a", sealed), TypeError);
  await assert.rejects(offline.openSealed("prj_a", sealed, {}), /sessionId is missing/);
  await assert.rejects(offline.openSealed("prj_a", sealed, { sessionId: "sess_a", projectId: "prj_b" }), TypeError);
});

test("another visitor's or another project's verdict is refused", () => {
  const refused = (err) => err instanceof SealedVerdictError && err.reason === "mismatch";
  assert.throws(() => Vigil.openSealed(sealed, [key], { ...expect, sessionId: "sess_b" }), refused);
  assert.throws(() => Vigil.openSealed(sealed, [key], { ...expect, projectId: "prj_b" }), refused);
  assert.throws(() => Vigil.openSealed(sealed, [key], { ...expect, origin: "https://evil.example" }), refused);
  assert.deepEqual(Vigil.openSealed(sealed, [key], { ...expect, origin: "https://shop.example" }), claims);
});

test("base64url is strict: padding, + and /, whitespace and non-canonical last characters are refused", () => {
  const tag = 4; // 16 bytes: 22 characters, four spare bits in the last one
  assert.throws(() => Vigil.openSealed(withPart(tag, (p) => `${p}==`), [key], expect), malformed);
  assert.throws(() => Vigil.openSealed(withPart(tag, nonCanonical), [key], expect), malformed);
  assert.throws(() => Vigil.openSealed(withPart(3, (p) => `${p.slice(0, 4)}/${p.slice(5)}`), [key], expect), malformed);
  assert.throws(() => Vigil.openSealed(withPart(3, (p) => `${p.slice(0, 4)}+${p.slice(5)}`), [key], expect), malformed);
  assert.throws(() => Vigil.openSealed(withPart(3, (p) => `${p.slice(0, 8)}\n${p.slice(8)}`), [key], expect), malformed);
  assert.throws(() => Vigil.openSealed(` ${sealed}`, [key], expect), malformed);
  assert.throws(() => Vigil.openSealed(`${sealed}\n`, [key], expect), malformed);
  // A key whose k is not canonical base64url is not used.
  const lax = { ...key, k: nonCanonical(key.k) };
  assert.throws(() => Vigil.openSealed(sealed, [lax], expect), (err) => err instanceof SealedVerdictError && err.reason === "bad_key");
  assert.deepEqual(Vigil.openSealed(sealed, [key], expect), claims, "the untouched verdict still opens");
});
