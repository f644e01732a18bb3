// One error class per way a call can fail that a caller may want to handle differently;
// everything the client throws for a request is a VigilError, so one `catch` covers all.

export class VigilError extends Error {
  /** The HTTP status, or 0 when no answer came (connection refused, timeout, abort). */
  readonly status: number;
  /** The answer's headers (rate-limit fields, Retry-After, ...); undefined without an answer. */
  readonly headers: Headers | undefined;

  constructor(message: string, status: number, headers?: Headers, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
    this.headers = headers;
  }
}

/** 401: the developer key is missing, malformed or unknown. */
export class AuthenticationError extends VigilError {}
/** 403: the plan is not in force, the project limit is reached or the project is disabled. */
export class ForbiddenError extends VigilError {}
/** 404: the project, session, event, webhook or delivery does not exist (for this account). */
export class NotFoundError extends VigilError {}
/** 409: the project already has this webhook, or 10 of them. */
export class ConflictError extends VigilError {}
/** 400, 413, 415, 422: the request was refused as it stands; the message names what is wrong. */
export class ValidationError extends VigilError {}

/** 429: over the plan's rate or monthly quota, after the client's own retries. */
export class RateLimitError extends VigilError {
  /** Seconds the API asked to wait (its Retry-After), when it said. */
  readonly retryAfter: number | undefined;

  constructor(message: string, headers: Headers, retryAfter: number | undefined) {
    super(message, 429, headers);
    this.retryAfter = retryAfter;
  }
}

/** No answer: DNS, connection refused or reset, or an abort by the caller. */
export class ConnectionError extends VigilError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 0, undefined, options);
  }
}

/** No answer within `timeoutMs` (or the verdict helper's deadline). */
export class TimeoutError extends ConnectionError {}

/** A webhook delivery whose signature, timestamp or headers do not verify. Not an API error. */
export class WebhookVerificationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "WebhookVerificationError";
  }
}

/** The error class for an answer's status. */
export function errorFor(status: number, message: string, headers: Headers): VigilError {
  switch (status) {
    case 400:
    case 413:
    case 415:
    case 422:
      return new ValidationError(message, status, headers);
    case 401:
      return new AuthenticationError(message, status, headers);
    case 403:
      return new ForbiddenError(message, status, headers);
    case 404:
      return new NotFoundError(message, status, headers);
    case 409:
      return new ConflictError(message, status, headers);
    case 429:
      return new RateLimitError(message, headers, parseRetryAfter(headers.get("retry-after")));
    default:
      return new VigilError(message, status, headers);
  }
}

/** Retry-After in seconds; the API sends delta-seconds only, so an HTTP date counts as unknown. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}

/** Why a sealed verdict was refused. */
export type SealedVerdictReason =
  /** Not a compact JWE with `dir` / `A256GCM`, or claims that are not a verdict's. */
  | "malformed"
  /** Its `kid` is not among the keys (another project's verdict, or a key rotated out). */
  | "unknown_key"
  /** The key given for its `kid` is not a 32-byte `oct` JWK. */
  | "bad_key"
  /** It does not decrypt and authenticate under its key: changed, or not sealed by Vigil. */
  | "unauthentic"
  /** Its `exp` has passed. */
  | "expired"
  /** A claim differs from the one expected (another session's or another origin's verdict). */
  | "mismatch";

/** A sealed verdict that does not open, or says something other than expected. Not an API error. */
export class SealedVerdictError extends Error {
  readonly reason: SealedVerdictReason;

  constructor(message: string, reason: SealedVerdictReason, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SealedVerdictError";
    this.reason = reason;
  }
}
