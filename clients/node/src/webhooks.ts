import { Webhook } from "standardwebhooks";
import { WebhookVerificationError } from "./errors.js";
import type { WebhookEvent } from "./types.js";

/** Request headers as frameworks hand them over: a fetch `Headers`, or a plain object. */
export type HeadersInput = Headers | Record<string, string | string[] | undefined>;

/** The three Standard Webhooks headers, lower-cased, whatever the input's casing. */
function webhookHeaders(headers: HeadersInput): Record<string, string> {
  const get =
    headers instanceof Headers
      ? (name: string) => headers.get(name) ?? undefined
      : (name: string) => {
          const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
          const value = key === undefined ? undefined : headers[key];
          // Node joins repeated headers into arrays; these three are sent once.
          return Array.isArray(value) ? value[0] : value;
        };
  const out: Record<string, string> = {};
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const value = get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Verifies a delivery and returns its parsed body. `payload` must be the body exactly as
 * received (the signature covers its bytes), not a re-serialised JSON object.
 *
 * `secret` is either the webhook's own `whsec_...` secret, handed to standardwebhooks as-is, or,
 * for legacy deliveries, the project's `apiKeyPrivate`, whose UTF-8 bytes are the HMAC key.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: HeadersInput,
  secret: string,
): WebhookEvent {
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  let webhook: Webhook;
  try {
    // standardwebhooks' raw format maps a string's chars to bytes one by one (Latin-1), so the
    // key goes in as UTF-8 bytes already encoded.
    webhook = secret.startsWith("whsec_")
      ? new Webhook(secret)
      : new Webhook(new TextEncoder().encode(secret), { format: "raw" });
  } catch (cause) {
    throw new WebhookVerificationError("The webhook secret is not usable", { cause });
  }
  try {
    return webhook.verify(body, webhookHeaders(headers)) as WebhookEvent;
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new WebhookVerificationError(`Webhook verification failed: ${reason}`, { cause });
  }
}
