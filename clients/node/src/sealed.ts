// Sealed verdicts: a visit's verdict that the collect route hands the page as a JWE (RFC 7516
// compact serialisation, `alg: dir`, `enc: A256GCM`), for the backend to open offline with the
// project's sealing keys. One algorithm pair, over node:crypto's AES-256-GCM: no JOSE library.
import { createDecipheriv } from "node:crypto";
import { SealedVerdictError } from "./errors.js";
import type { AgentStatus, SealingKey, SealingKeys } from "./types.js";

/** What a sealed verdict says (the JWE's JSON claims). */
export interface SealedVerdict {
  /** The stored event's id (as in `events()`), not the page's receipt id. */
  eventId: string;
  sessionId: string;
  projectId: string;
  scoreBot: number;
  scoreProxyVpn: number;
  /** The reasons' codes. */
  reasons: string[];
  device: string | null;
  /** The agent verdict's status; null for a visit without one. */
  agent: AgentStatus | null;
  /** RFC 3339. */
  createdAt: string;
  /** The page's origin as the collect route admitted it, e.g. `https://shop.example`. */
  origin: string;
  /** Issued at, Unix seconds. */
  iat: number;
  /** Expires at, Unix seconds (at most 10 minutes after `iat`). */
  exp: number;
}

/** The claims `expect` may name, compared with `===`. */
const EXPECTABLE = ["eventId", "sessionId", "projectId", "origin", "device", "agent"] as const;

/**
 * Claims the verdict must carry, compared with `===`. `sessionId` (the visitor this request
 * serves) and `projectId` (your project) are required, so that a verdict of another visit or of
 * another project is refused; `origin` (your page's, e.g. `https://shop.example`) is advised.
 */
export type SealedExpectations = { sessionId: string; projectId: string } & {
  [K in "eventId" | "origin" | "device" | "agent"]?: SealedVerdict[K];
};

/** A key as `sealingKey()` answers it; only `kid` and `k` are needed (e.g. kept in config). */
export type SealingKeyInput = Pick<SealingKey, "kid" | "k"> & Partial<SealingKey>;

/** The keys to open with: `sealingKey()`'s whole answer, or its `keys`. */
export type SealingKeysInput = readonly SealingKeyInput[] | Pick<SealingKeys, "keys">;

/** The longest a verdict Vigil seals is valid (`exp - iat`). */
export const MAX_SEALED_LIFETIME_SECONDS = 600;

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Strict base64url: the alphabet, no padding, and canonical (a changed trailing bit is refused). */
function decode(part: string, what: string): Buffer {
  const bytes = BASE64URL.test(part) ? Buffer.from(part, "base64url") : undefined;
  if (bytes === undefined || bytes.toString("base64url") !== part) {
    throw new SealedVerdictError(`The sealed verdict's ${what} is not base64url`, "malformed");
  }
  return bytes;
}

function parseJson(bytes: Buffer, what: string): unknown {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch (cause) {
    throw new SealedVerdictError(`The sealed verdict's ${what} is not JSON`, "malformed", { cause });
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The parsed protected header and segments of a compact JWE with `dir` / `A256GCM`. */
export function parseSealed(sealed: string): {
  kid: string;
  header: string;
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
} {
  if (typeof sealed !== "string") {
    throw new SealedVerdictError("The sealed verdict must be a string (the collect route's `sealed`)", "malformed");
  }
  // As the API answered it: no whitespace around it or in it (the segments are strict too).
  const parts = sealed.split(".");
  if (parts.length !== 5) {
    throw new SealedVerdictError("The sealed verdict is not a compact JWE (five parts separated by dots)", "malformed");
  }
  const [header, encryptedKey, iv, ciphertext, tag] = parts as [string, string, string, string, string];
  const h = parseJson(decode(header, "header"), "header");
  if (!isObject(h)) throw new SealedVerdictError("The sealed verdict's header is not a JSON object", "malformed");
  if (h.alg !== "dir" || h.enc !== "A256GCM") {
    throw new SealedVerdictError(
      `The sealed verdict uses alg ${JSON.stringify(h.alg)} and enc ${JSON.stringify(h.enc)}; only "dir" and "A256GCM" are accepted`,
      "malformed",
    );
  }
  if (h.zip !== undefined || h.crit !== undefined) {
    throw new SealedVerdictError("The sealed verdict's header has members Vigil never sets (zip, crit)", "malformed");
  }
  if (typeof h.kid !== "string" || h.kid === "") {
    throw new SealedVerdictError("The sealed verdict's header names no key (kid)", "malformed");
  }
  if (encryptedKey !== "") {
    throw new SealedVerdictError("The sealed verdict has an encrypted key; with alg dir it must be empty", "malformed");
  }
  const parsed = {
    kid: h.kid,
    header,
    iv: decode(iv, "IV"),
    ciphertext: decode(ciphertext, "ciphertext"),
    tag: decode(tag, "tag"),
  };
  if (parsed.iv.length !== 12) throw new SealedVerdictError("The sealed verdict's IV is not 12 bytes", "malformed");
  if (parsed.tag.length !== 16) throw new SealedVerdictError("The sealed verdict's tag is not 16 bytes", "malformed");
  return parsed;
}

function keyList(keys: SealingKeysInput): readonly SealingKeyInput[] {
  const list = Array.isArray(keys) ? keys : (keys as Partial<Pick<SealingKeys, "keys">> | null)?.keys;
  if (!Array.isArray(list)) {
    throw new TypeError("keys must be the sealing keys (an array of JWKs, or sealingKey()'s { sealedResults, keys })");
  }
  return list as readonly SealingKeyInput[];
}

/** Whether the claims have the types a verdict's claims have. */
function isVerdict(c: Record<string, unknown>): boolean {
  const str = (v: unknown) => typeof v === "string";
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v);
  return (
    str(c.eventId) &&
    str(c.sessionId) &&
    str(c.projectId) &&
    num(c.scoreBot) &&
    num(c.scoreProxyVpn) &&
    Array.isArray(c.reasons) &&
    c.reasons.every(str) &&
    (c.device === null || str(c.device)) &&
    (c.agent === null || str(c.agent)) &&
    str(c.createdAt) &&
    str(c.origin) &&
    Number.isInteger(c.iat) &&
    Number.isInteger(c.exp)
  );
}

/**
 * What `openSealed` compares, checked before anything else: a call without the session and the
 * project it serves is a programming error (a TypeError), never a verdict that opens anyway.
 */
export function checkExpectations(expect: unknown): Array<[string, unknown]> {
  const usage =
    "openSealed needs expect: { sessionId, projectId } at least (the visitor's session and your project), " +
    "else another visitor's or another project's verdict would open";
  if (typeof expect !== "object" || expect === null || Array.isArray(expect)) throw new TypeError(usage);
  const entries = Object.entries(expect as Record<string, unknown>).filter(([, v]) => v !== undefined);
  for (const required of ["sessionId", "projectId"]) {
    const value = (expect as Record<string, unknown>)[required];
    if (typeof value !== "string" || value === "") {
      throw new TypeError(`${usage}: ${required} is ${value === undefined ? "missing" : JSON.stringify(value)}`);
    }
  }
  for (const [name] of entries) {
    if (!(EXPECTABLE as readonly string[]).includes(name)) {
      throw new TypeError(`openSealed cannot expect ${JSON.stringify(name)}; it compares ${EXPECTABLE.join(", ")}`);
    }
  }
  return entries;
}

/**
 * Opens a sealed verdict with the project's keys (chosen by the JWE's `kid`), and checks that it
 * is authentic, unexpired and carries every claim of `expect` (`sessionId` and `projectId`
 * required). Throws a SealedVerdictError otherwise (a TypeError without `expect`); never returns
 * claims it did not check.
 */
export function openSealed(
  sealed: string,
  keys: SealingKeysInput,
  expect: SealedExpectations,
  now: number = Date.now(),
): SealedVerdict {
  const expectations = checkExpectations(expect);
  const list = keyList(keys);
  const jwe = parseSealed(sealed);
  const key = list.find((k) => k.kid === jwe.kid);
  if (key === undefined) {
    throw new SealedVerdictError(
      `The sealed verdict's key ${JSON.stringify(jwe.kid)} is not among the ${list.length} key(s) given (another project's verdict, or a key rotated out)`,
      "unknown_key",
    );
  }
  if ((key.kty !== undefined && key.kty !== "oct") || typeof key.k !== "string") {
    throw new SealedVerdictError(`The key ${key.kid} is not a symmetric JWK (kty "oct" with k)`, "bad_key");
  }
  let secret: Buffer;
  try {
    secret = decode(key.k, "key");
  } catch {
    throw new SealedVerdictError(`The key ${key.kid}'s k is not base64url`, "bad_key");
  }
  if (secret.length !== 32) throw new SealedVerdictError(`The key ${key.kid} is not 32 bytes`, "bad_key");

  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv("aes-256-gcm", secret, jwe.iv, { authTagLength: 16 });
    // RFC 7516 5.2: the additional data is the ASCII of the encoded protected header.
    decipher.setAAD(Buffer.from(jwe.header, "ascii"));
    decipher.setAuthTag(jwe.tag);
    plaintext = Buffer.concat([decipher.update(jwe.ciphertext), decipher.final()]);
  } catch (cause) {
    throw new SealedVerdictError(
      "The sealed verdict does not authenticate under its key (changed, or not sealed by Vigil)",
      "unauthentic",
      { cause },
    );
  }

  const claims = parseJson(plaintext, "claims");
  if (!isObject(claims) || !isVerdict(claims)) {
    throw new SealedVerdictError("The sealed verdict's claims are not a verdict's", "malformed");
  }
  const verdict = claims as unknown as SealedVerdict;
  const nowSeconds = Math.floor(now / 1000);
  if (verdict.exp - verdict.iat > MAX_SEALED_LIFETIME_SECONDS || verdict.exp < verdict.iat) {
    throw new SealedVerdictError(
      `The sealed verdict claims a lifetime of ${verdict.exp - verdict.iat} s; Vigil seals for at most ${MAX_SEALED_LIFETIME_SECONDS} s`,
      "malformed",
    );
  }
  if (nowSeconds >= verdict.exp) {
    throw new SealedVerdictError(
      `The sealed verdict expired ${nowSeconds - verdict.exp} s ago (exp ${new Date(verdict.exp * 1000).toISOString()})`,
      "expired",
    );
  }
  for (const [name, expected] of expectations) {
    const actual = (verdict as unknown as Record<string, unknown>)[name];
    if (actual !== expected) {
      throw new SealedVerdictError(
        `The sealed verdict's ${name} is ${JSON.stringify(actual)}, not the expected ${JSON.stringify(expected)}`,
        "mismatch",
      );
    }
  }
  return verdict;
}
