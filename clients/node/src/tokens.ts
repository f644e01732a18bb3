import { createHmac } from "node:crypto";

/** The longest a session token may live; the API refuses tokens with a later expiry. */
export const MAX_TOKEN_TTL_SECONDS = 86_400;

/**
 * A session token for the browser agent's collect route: `${expiry}.${hex}`, where hex is the
 * HMAC-SHA256 of `vigil/${sessionId}:${expiry}` keyed by the project's `apiKeyPrivate`.
 * The `vigil/` prefix separates these signatures from any other use of the key; the server
 * also accepts the older `${projectId}:${sessionId}:${expiry}` form, which is not minted here.
 */
export function sessionToken(projectSecret: string, sessionId: string, ttlSeconds = 3600): string {
  if (!projectSecret) throw new TypeError("projectSecret (the project's apiKeyPrivate) is required");
  if (!sessionId) throw new TypeError("sessionId is required");
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be an integer from 1 to ${MAX_TOKEN_TTL_SECONDS}`);
  }
  const expiry = Math.floor(Date.now() / 1000) + ttlSeconds;
  const hex = createHmac("sha256", projectSecret).update(`vigil/${sessionId}:${expiry}`).digest("hex");
  return `${expiry}.${hex}`;
}
