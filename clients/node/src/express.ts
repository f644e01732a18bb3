// Express middleware, typed structurally so that the package needs no dependency on express:
// anything with Node's request headers and a response with `locals`, `setHeader`, `statusCode`
// and `end` fits (Express 4 and 5, and Connect-style servers that add `locals`).
//
// How it fails is chosen, not accidental: the one API call it makes (the project's keys, once)
// has a short deadline, concurrent requests share it, a failure is remembered for a moment only,
// and `onError` decides what a request gets while the keys are unavailable (fail open by
// default: the page is served without the agent; fail closed: a 503 with a JSON message).
import { randomBytes } from "node:crypto";
import { TimeoutError } from "./errors.js";
import { MAX_TOKEN_TTL_SECONDS, sessionToken } from "./tokens.js";
import type { Project } from "./types.js";

/**
 * Your handler for a request whose keys could not be read. Typed with the structural request
 * and response, but a handler written for Express's own `Request` and `Response` fits too.
 */
export type ExpressErrorHandler = {
  // A method's parameters are compared both ways (the "bivariance hack" of @types/react).
  bivarianceHack(err: Error, req: RequestLike, res: ResponseLike, next: (err?: unknown) => void): void;
}["bivarianceHack"];

/** What the middleware does with a request when the project's keys cannot be had. */
export type ExpressOnError =
  /** Serve the request: `res.locals.vigil` is a `VigilUnavailable` (the default). */
  | "open"
  /** Answer 503 with `{"message": ...}` and `Retry-After`; the route does not run. */
  | "closed"
  /** Your call: `res.locals.vigil` is already the `VigilUnavailable`; call `next()`, `next(err)` or answer. */
  | ExpressErrorHandler;

export interface ExpressOptions {
  /** The project whose page the agent runs on. */
  project: string;
  /** The project's `apiKeyPrivate`; read once from the API when not given. */
  projectSecret?: string;
  /** The project's `apiKeyPublic`; with `projectSecret` too, the middleware makes no API call at all. */
  publicKey?: string;
  /** The cookie naming the visitor's session. */
  cookie?: string;
  /** How long a minted token is valid (1 to 86400 seconds). Default 3600. */
  ttlSeconds?: number;
  /**
   * The longest a request waits for the project's keys (the one API call, retries included).
   * Default 2000. Requests arriving while the call is under way wait for it, never longer.
   */
  timeoutMs?: number;
  /** After a failed read, requests fail at once (no new call) for this long. Default 1000. */
  retryIntervalMs?: number;
  /** What a request gets when the keys cannot be read: "open" (default), "closed" or a handler. */
  onError?: ExpressOnError;
}

/** What the middleware leaves in `res.locals.vigil` for the page template. */
export interface VigilLocals {
  /** True: the keys were read and the token minted. */
  available: true;
  projectId: string;
  /** The project's `apiKeyPublic`, for `Vigil.collect({ publicKey })` on the page. */
  publicKey: string;
  sessionId: string;
  sessionToken: string;
  error?: undefined;
}

/** `res.locals.vigil` when the project's keys could not be read (Vigil down, slow or refusing). */
export interface VigilUnavailable {
  available: false;
  projectId: string;
  /** The visitor's session (cookie) all the same, so a later page can carry on with it. */
  sessionId: string;
  publicKey: null;
  sessionToken: null;
  /** Why: a ConnectionError, a TimeoutError, or the API's error (NotFoundError, ...). */
  error: Error;
}

/** Either of the two: check `available` (or `error`) before rendering the agent. */
export type VigilPageLocals = VigilLocals | VigilUnavailable;

export interface RequestLike {
  headers: { cookie?: string | undefined };
  /** Express sets it for https (or a trusted proxy's X-Forwarded-Proto). */
  secure?: boolean;
}

export interface ResponseLike {
  locals: Record<string, unknown>;
  statusCode: number;
  getHeader(name: string): number | string | string[] | undefined;
  setHeader(name: string, value: string | string[]): unknown;
  end(chunk: string): unknown;
}

export type Middleware = (req: RequestLike, res: ResponseLike, next: (err?: unknown) => void) => void;

/** Gets the project, giving up when `signal` aborts. */
export type ProjectReader = (id: string, options: { signal: AbortSignal }) => Promise<Project>;

export const DEFAULT_MIDDLEWARE_TIMEOUT_MS = 2000;
export const DEFAULT_RETRY_INTERVAL_MS = 1000;

// A session id as the API takes it (letters, digits, `_ . : -`, at most 128, not only dots).
const SESSION_ID = /^(?=.*[A-Za-z0-9_:-])[A-Za-z0-9_.:-]{1,128}$/;
// A cookie name (RFC 6265 token).
const COOKIE_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function readCookie(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? "").split(";")) {
    const eq = pair.indexOf("=");
    if (eq !== -1 && pair.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(pair.slice(eq + 1).trim());
      } catch {
        return undefined; // a malformed value is treated as no cookie: a new session starts
      }
    }
  }
  return undefined;
}

function appendSetCookie(res: ResponseLike, cookie: string): void {
  // Keep cookies other middleware already set on this response.
  const existing = res.getHeader("Set-Cookie");
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
  res.setHeader("Set-Cookie", [...list, cookie]);
}

function positive(name: string, value: number | undefined, fallback: number, zeroOk = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || (!zeroOk && value === 0)) {
    throw new TypeError(`${name} must be a ${zeroOk ? "non-negative" : "positive"} number of milliseconds`);
  }
  return value;
}

/** Checks the options once, at set-up: a mistake there is a TypeError, not a failing page. */
function checked(options: ExpressOptions) {
  if (typeof options !== "object" || options === null) throw new TypeError("express() needs { project }");
  const { project, cookie = "vigil_session", ttlSeconds = 3600, onError = "open" } = options;
  if (typeof project !== "string" || project === "") throw new TypeError("express() needs { project }: the project's id");
  if (typeof cookie !== "string" || !COOKIE_NAME.test(cookie)) throw new TypeError(`cookie ${JSON.stringify(cookie)} is not a cookie name`);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be an integer from 1 to ${MAX_TOKEN_TTL_SECONDS}`);
  }
  if (onError !== "open" && onError !== "closed" && typeof onError !== "function") {
    throw new TypeError(`onError must be "open", "closed" or a function (err, req, res, next), not ${JSON.stringify(onError)}`);
  }
  for (const name of ["projectSecret", "publicKey"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "string" || value === "")) throw new TypeError(`${name} must be a non-empty string`);
  }
  return {
    project,
    cookie,
    ttlSeconds,
    onError,
    timeoutMs: positive("timeoutMs", options.timeoutMs, DEFAULT_MIDDLEWARE_TIMEOUT_MS),
    retryIntervalMs: positive("retryIntervalMs", options.retryIntervalMs, DEFAULT_RETRY_INTERVAL_MS, true),
  };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** `promise`, or a TimeoutError once `ms` have passed (the timer does not keep Node alive). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new TimeoutError(`No project keys from Vigil within ${ms} ms`)),
      Math.max(0, ms),
    );
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

interface Keys {
  publicKey: string;
  secret: string;
}

/**
 * The project's keys, read at most once at a time: concurrent callers share the read in flight
 * (single-flight), a read is bounded by `timeoutMs`, a success is kept for the process's life (the
 * keys change only by rotation) and a failure only for `retryIntervalMs`.
 */
export function projectKeysLoader(
  getProject: ProjectReader,
  projectId: string,
  given: { publicKey?: string | undefined; projectSecret?: string | undefined },
  timeoutMs: number,
  retryIntervalMs: number,
): () => Promise<Keys> {
  if (given.publicKey !== undefined && given.projectSecret !== undefined) {
    const keys = Promise.resolve({ publicKey: given.publicKey, secret: given.projectSecret });
    return () => keys;
  }
  let kept: Keys | undefined;
  let inFlight: { keys: Promise<Keys> } | undefined;
  let failure: { error: Error; until: number } | undefined;

  return () => {
    if (kept !== undefined) return Promise.resolve(kept);
    const now = Date.now();
    if (inFlight === undefined) {
      if (failure !== undefined && now < failure.until) return Promise.reject(failure.error);
      const read = getProject(projectId, { signal: AbortSignal.timeout(timeoutMs) }).then((p) => ({
        publicKey: given.publicKey ?? p.apiKeyPublic,
        secret: given.projectSecret ?? p.apiKeyPrivate,
      }));
      const attempt = { keys: within(read, timeoutMs) };
      inFlight = attempt;
      attempt.keys.then(
        (keys) => {
          kept = keys;
          failure = undefined;
          if (inFlight === attempt) inFlight = undefined;
        },
        (err: unknown) => {
          failure = { error: asError(err), until: Date.now() + retryIntervalMs };
          if (inFlight === attempt) inFlight = undefined;
        },
      );
    }
    // A latecomer waits for the read under way, never past its deadline.
    return inFlight.keys;
  };
}

export function expressMiddleware(getProject: ProjectReader, options: ExpressOptions): Middleware {
  const { project: projectId, cookie, ttlSeconds, onError, timeoutMs, retryIntervalMs } = checked(options);
  const projectKeys = projectKeysLoader(getProject, projectId, options, timeoutMs, retryIntervalMs);

  return (req, res, next) => {
    let sessionId = readCookie(req.headers.cookie, cookie);
    if (sessionId === undefined || !SESSION_ID.test(sessionId)) {
      sessionId = `sess_${randomBytes(16).toString("hex")}`;
      const secure = req.secure ? "; Secure" : "";
      appendSetCookie(res, `${cookie}=${sessionId}; Path=/; HttpOnly; SameSite=Lax${secure}`);
    }
    const id = sessionId;
    projectKeys().then(
      ({ publicKey, secret }) => {
        let token: string;
        try {
          token = sessionToken(secret, id, ttlSeconds);
        } catch (err) {
          return unavailable(asError(err));
        }
        const locals: VigilLocals = { available: true, projectId, publicKey, sessionId: id, sessionToken: token };
        res.locals.vigil = locals;
        next();
      },
      (err: unknown) => unavailable(asError(err)),
    );

    function unavailable(error: Error): void {
      const locals: VigilUnavailable = {
        available: false,
        projectId,
        sessionId: id,
        publicKey: null,
        sessionToken: null,
        error,
      };
      res.locals.vigil = locals;
      if (onError === "open") return next();
      if (onError === "closed") {
        // Not the error's text: it may name internal addresses. The app's logs have `error`.
        res.statusCode = 503;
        res.setHeader("Content-Type", "application/json; charset=utf-8");
        res.setHeader("Cache-Control", "no-store");
        res.setHeader("Retry-After", String(Math.max(1, Math.ceil(retryIntervalMs / 1000))));
        res.end(JSON.stringify({ message: "Bot protection is unavailable for the moment; please try again shortly." }));
        return;
      }
      try {
        onError(error, req, res, next);
      } catch (thrown) {
        next(thrown);
      }
    }
  };
}
