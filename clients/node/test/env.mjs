// Shared by the tests: the server under test comes from the environment (run-e2e.sh sets it).
import { randomBytes } from "node:crypto";
import { Vigil } from "vigil-client";

export const baseUrl = required("VIGIL_BASE_URL");
export const apiKey = required("VIGIL_API_KEY");
export const projectId = required("VIGIL_PROJECT");

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (run the tests through run-e2e.sh)`);
  return value;
}

/**
 * A client with room for the demo plan's burst limit (10 requests a second): the tests make
 * many calls in a row, and waiting out a 429 is the behaviour under test anyway.
 */
export function client(options = {}) {
  return new Vigil({ apiKey, baseUrl, maxRetries: 10, ...options });
}

/** A session id of its own for each test, so runs and tests never see each other's events. */
export function newSessionId(label) {
  return `test-${label}-${randomBytes(6).toString("hex")}`;
}

/** POSTs a visit to the browser agent's route as a page on a loopback origin would. */
export async function collect(publicKey, sessionId, sessionToken) {
  const response = await fetch(`${baseUrl}/v1/collect`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: `http://localhost:${new URL(baseUrl).port}` },
    body: JSON.stringify({ publicKey, sessionId, sessionToken, signals: { webdriver: false } }),
  });
  return { status: response.status, body: await response.json() };
}
