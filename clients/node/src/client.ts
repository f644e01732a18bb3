import {
  ConnectionError,
  TimeoutError,
  VigilError,
  SealedVerdictError,
  errorFor,
  parseRetryAfter,
} from "./errors.js";
import { expressMiddleware, type ExpressOptions, type Middleware } from "./express.js";
import { parseRateLimit, type RateLimit } from "./ratelimit.js";
import {
  checkExpectations,
  openSealed,
  type SealedExpectations,
  type SealedVerdict,
  type SealingKeysInput,
} from "./sealed.js";
import { sessionToken } from "./tokens.js";
import type {
  Delivery,
  DeviceSessionsQuery,
  Event,
  Label,
  LabelsQuery,
  NewEvent,
  NewLabel,
  NewProject,
  NewWebhook,
  PageQuery,
  Plan,
  Project,
  ProjectChanges,
  Quality,
  QualityQuery,
  Queued,
  Result,
  SealingKeys,
  SessionScore,
  SessionSummary,
  SessionsQuery,
  StatsBucket,
  StatsQuery,
  Usage,
  Webhook,
  WebhookEvent,
} from "./types.js";
import { verifyWebhook, type HeadersInput } from "./webhooks.js";

export const VERSION = "1.0.0";

export interface VigilOptions {
  /** A developer key, `vgl_...`. Default: `process.env.VIGIL_API_KEY`. */
  apiKey?: string;
  /**
   * The API's address: its origin (`https://vigil.example`) or the API reference's base with
   * the version (`https://vigil.example/v1`); a trailing `/v1` or `/v1/` is dropped, since every
   * route adds it. Anything but an http(s) URL without query, fragment or credentials is a
   * TypeError here. Default: `process.env.VIGIL_BASE_URL` or http://127.0.0.1:3000.
   */
  baseUrl?: string;
  /** How many times a 429 is retried after its Retry-After (capped at 30 s). Default 2. */
  maxRetries?: number;
  /** Deadline for each attempt of a request, answer body included. Default 30000. */
  timeoutMs?: number;
}

export interface RequestOptions {
  /** Aborts the call (its retries and their waits too). */
  signal?: AbortSignal;
}

export interface CreateOptions extends RequestOptions {
  /** Sent as `Idempotency-Key`: a retry with the same key and request writes nothing twice. */
  idempotencyKey?: string;
}

export interface OpenSealedOptions extends RequestOptions {
  /**
   * The longest the project's keys may take to read (one read, shared by concurrent calls, no
   * 429 wait past it) when the client does not hold them yet. Default 2000: a checkout waits
   * seconds, not the client's `timeoutMs`. Past it, a TimeoutError: you choose open or closed.
   */
  timeoutMs?: number;
}

/** The default deadline of `openSealed`'s read of the keys, in ms. */
const SEALING_KEYS_TIMEOUT_MS = 2000;

/** `promise`, unless `signal` aborts first (the work goes on for whoever else waits on it). */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/** `expect` of `vigil.openSealed(projectId, ...)`: the project is the method's own. */
export type ProjectSealedExpectations = Omit<SealedExpectations, "projectId"> & { projectId?: string };

export interface VerdictOptions<F> {
  /** The whole call's deadline, retries included. Default 1500. */
  timeoutMs?: number;
  /** Returned instead of throwing on a timeout or any error. */
  fallback?: F;
}

/** The longest wait on a Retry-After, so a bad header cannot stall a caller for hours. */
const MAX_RETRY_WAIT_SECONDS = 30;

/** The least time between two fetches of a project's sealing keys for a verdict of an unknown kid. */
const SEALING_KEYS_REFETCH_MS = 1000;

type Query = Record<string, string | number | boolean | undefined>;

interface Call {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** A path under /v1 (segments already encoded), or a URL from a Link header. */
  path: string | URL;
  query?: Query | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  signal?: AbortSignal | undefined;
}

/** A list the API pages: iterate it for every item, or `pages()` for the pages as fetched. */
export class Paginated<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPages: () => AsyncGenerator<T[]>) {}

  pages(): AsyncGenerator<T[]> {
    return this.fetchPages();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.fetchPages()) yield* page;
  }

  /** Every item of every page (Array.fromAsync is Node 22+). */
  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}

/** The target of `Link: <...>; rel="next"`, if the answer names one. */
function nextLink(header: string | null): string | undefined {
  for (const part of (header ?? "").split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (match && /;\s*rel="?([^";]*\s)?next(\s[^";]*)?"?/i.test(match[2] ?? "")) return match[1];
  }
  return undefined;
}

const segment = encodeURIComponent;

/**
 * The API's base address as the client uses it: no trailing slash and no `/v1` (each route adds
 * the version itself, so `https://host/v1` would otherwise call `/v1/v1/...` and get a bare 404).
 * A URL the client cannot use is refused here, with what is wrong, rather than at the first call.
 */
export function normalizeBaseUrl(raw: string): string {
  const given = typeof raw === "string" ? raw.trim() : "";
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new TypeError(`baseUrl ${JSON.stringify(raw)} is not a URL; give the API's address, e.g. https://vigil.example`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`baseUrl ${JSON.stringify(raw)} is not http(s); give the API's address, e.g. https://vigil.example`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new TypeError("baseUrl must not carry credentials; the developer key goes in apiKey");
  }
  if (url.search !== "" || url.hash !== "" || given.includes("?") || given.includes("#")) {
    throw new TypeError(`baseUrl ${JSON.stringify(raw)} has a query or fragment; give the API's address only`);
  }
  let path = url.pathname.replace(/\/+$/, "");
  if (path.endsWith("/v1")) path = path.slice(0, -"/v1".length).replace(/\/+$/, "");
  return `${url.origin}${path}`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A caller's abort as a VigilError: a timeout signal (AbortSignal.timeout) keeps its meaning. */
function abortError(signal: AbortSignal): VigilError {
  const reason: unknown = signal.reason;
  if (reason instanceof VigilError) return reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return new TimeoutError("The request timed out", { cause: reason });
  }
  return new ConnectionError("The request was aborted", { cause: reason });
}

export class Vigil {
  static readonly VERSION = VERSION;

  /** The rate-limit fields of the latest answer that carried them. */
  rateLimit: RateLimit | undefined;

  readonly baseUrl: string;
  readonly maxRetries: number;
  readonly timeoutMs: number;
  readonly #apiKey: string;
  /** Each project's sealing keys for `openSealed`, as fetched (or being fetched), and since when. */
  readonly #sealingKeys = new Map<string, { keys: Promise<SealingKeys>; fetchedAt: number }>();

  constructor(options: VigilOptions = {}) {
    const apiKey = options.apiKey ?? process.env.VIGIL_API_KEY;
    if (!apiKey) throw new TypeError("apiKey is required (a developer key, vgl_...)");
    this.#apiKey = apiKey;
    // The origin only: every route adds /v1 itself, and Link targets are absolute paths.
    this.baseUrl = normalizeBaseUrl(options.baseUrl ?? process.env.VIGIL_BASE_URL ?? "http://127.0.0.1:3000");
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  // ---- static helpers (no API call) ----

  /** A session token for the browser agent (see tokens.ts for the format). */
  static sessionToken(projectSecret: string, sessionId: string, ttlSeconds = 3600): string {
    return sessionToken(projectSecret, sessionId, ttlSeconds);
  }

  /** Verifies a webhook delivery and returns its body; throws WebhookVerificationError. */
  static verifyWebhook(payload: string | Uint8Array, headers: HeadersInput, secret: string): WebhookEvent {
    return verifyWebhook(payload, headers, secret);
  }

  /**
   * Opens a sealed verdict (the collect route's `sealed`) with the project's keys: `keys` is
   * `sealingKey()`'s answer or its `keys`. Checks the JWE's algorithms, its authenticity, its
   * `exp` and every claim of `expect`, which must name at least the visitor's `sessionId` and
   * your `projectId` (a TypeError otherwise; add `origin` too); throws a SealedVerdictError when
   * the verdict is not to be trusted. No API call.
   */
  static openSealed(sealed: string, keys: SealingKeysInput, expect: SealedExpectations): SealedVerdict {
    return openSealed(sealed, keys, expect);
  }

  // ---- account ----

  plan(options?: RequestOptions): Promise<Plan> {
    return this.data({ method: "GET", path: "/plan", signal: options?.signal });
  }

  usage(options?: RequestOptions): Promise<Usage> {
    return this.data({ method: "GET", path: "/usage", signal: options?.signal });
  }

  // ---- projects ----

  projects(options?: RequestOptions): Promise<Project[]> {
    return this.data({ method: "GET", path: "/projects", signal: options?.signal });
  }

  project(projectId: string, options?: RequestOptions): Promise<Project> {
    return this.data({ method: "GET", path: `/projects/${segment(projectId)}`, signal: options?.signal });
  }

  createProject(project: NewProject, options?: CreateOptions): Promise<Project> {
    return this.data({
      method: "POST",
      path: "/projects",
      body: project,
      headers: idempotency(options),
      signal: options?.signal,
    });
  }

  async updateProject(projectId: string, changes: ProjectChanges, options?: RequestOptions): Promise<Project> {
    const project = await this.data<Project>({
      method: "PATCH",
      path: `/projects/${segment(projectId)}`,
      body: changes,
      signal: options?.signal,
    });
    // Turning sealing on may give the project its first key: read the keys afresh next time.
    if (changes.sealedResults !== undefined) this.#sealingKeys.delete(projectId);
    return project;
  }

  stats(projectId: string, query: StatsQuery = {}, options?: RequestOptions): Promise<StatsBucket[]> {
    return this.data({
      method: "GET",
      path: `/projects/${segment(projectId)}/stats`,
      query,
      signal: options?.signal,
    });
  }

  // ---- sealed verdicts ----

  /** Whether the project seals its verdicts, and the keys that open them (current first). */
  async sealingKey(projectId: string, options?: RequestOptions): Promise<SealingKeys> {
    const keys = await this.data<SealingKeys>({
      method: "GET",
      path: `/projects/${segment(projectId)}/sealing-key`,
      signal: options?.signal,
    });
    this.#sealingKeys.set(projectId, { keys: Promise.resolve(keys), fetchedAt: Date.now() });
    return keys;
  }

  /** A new sealing key; the replaced one stays listed (with its `expiresAt`) for the overlap. */
  async rotateSealingKey(projectId: string, options?: RequestOptions): Promise<SealingKeys> {
    const keys = await this.data<SealingKeys>({
      method: "POST",
      path: `/projects/${segment(projectId)}/sealing-key/rotate`,
      signal: options?.signal,
    });
    this.#sealingKeys.set(projectId, { keys: Promise.resolve(keys), fetchedAt: Date.now() });
    return keys;
  }

  /**
   * Opens a sealed verdict of the project, as `Vigil.openSealed` does (`projectId` is expected
   * too, so `expect` needs only the visitor's `sessionId`, plus `origin` if you can), with the
   * project's keys read once and kept (concurrent first calls share one read). A verdict whose
   * key is not among them (the key was rotated since) makes the client read them once more, at
   * most once a second per project, so that forged verdicts cannot spend the API's rate limit.
   */
  async openSealed(
    projectId: string,
    sealed: string,
    expect: ProjectSealedExpectations,
    options?: OpenSealedOptions,
  ): Promise<SealedVerdict> {
    if (typeof expect !== "object" || expect === null) checkExpectations(expect); // throws
    if (expect.projectId !== undefined && expect.projectId !== projectId) {
      throw new TypeError(
        `expect.projectId ${JSON.stringify(expect.projectId)} is not the project ${JSON.stringify(projectId)}`,
      );
    }
    // Checked before the keys are read: a call without the session fails at once, offline.
    const checks = { ...expect, projectId } as SealedExpectations;
    checkExpectations(checks);
    const timeoutMs = options?.timeoutMs ?? SEALING_KEYS_TIMEOUT_MS;
    const used = this.#sealingKeys.get(projectId) ?? this.fetchSealingKeys(projectId, timeoutMs);
    const keys = await unlessAborted(used.keys, options?.signal);
    try {
      return openSealed(sealed, keys, checks);
    } catch (err) {
      if (!(err instanceof SealedVerdictError && err.reason === "unknown_key")) throw err;
      const latest = this.#sealingKeys.get(projectId);
      let fresh: { keys: Promise<SealingKeys> };
      if (latest !== undefined && latest !== used) {
        fresh = latest; // read again since (or being read): no need for another call
      } else if (Date.now() - used.fetchedAt < SEALING_KEYS_REFETCH_MS) {
        throw err;
      } else {
        fresh = this.fetchSealingKeys(projectId, timeoutMs);
      }
      return openSealed(sealed, await unlessAborted(fresh.keys, options?.signal), checks);
    }
  }

  /**
   * Reads the project's keys into the cache, within `timeoutMs` (its own deadline, not a
   * caller's signal: concurrent callers share the read); a failed read is not kept.
   */
  private fetchSealingKeys(projectId: string, timeoutMs: number) {
    const entry = {
      keys: this.data<SealingKeys>({
        method: "GET",
        path: `/projects/${segment(projectId)}/sealing-key`,
        signal: AbortSignal.timeout(timeoutMs),
      }),
      fetchedAt: Date.now(),
    };
    this.#sealingKeys.set(projectId, entry);
    entry.keys.catch(() => {
      if (this.#sealingKeys.get(projectId) === entry) this.#sealingKeys.delete(projectId);
    });
    return entry;
  }

  // ---- events, results and sessions ----

  /** Evaluates a visit the backend saw and stores it as an event of the session. */
  createEvent(projectId: string, sessionId: string, evidence: NewEvent, options?: CreateOptions): Promise<Event> {
    return this.data({
      method: "POST",
      path: `/projects/${segment(projectId)}/sessions/${segment(sessionId)}/events`,
      body: evidence,
      headers: idempotency(options),
      signal: options?.signal,
    });
  }

  /** The session's events, newest first, across every page. */
  events(projectId: string, sessionId: string, query: PageQuery = {}, options?: RequestOptions): Paginated<Event> {
    return this.paginate(`/projects/${segment(projectId)}/sessions/${segment(sessionId)}/events`, query, options);
  }

  event(projectId: string, sessionId: string, eventId: string, options?: RequestOptions): Promise<Event> {
    return this.data({
      method: "GET",
      path: `/projects/${segment(projectId)}/sessions/${segment(sessionId)}/events/${segment(eventId)}`,
      signal: options?.signal,
    });
  }

  /** The session's results (scores only), newest first, across every page. */
  results(projectId: string, sessionId: string, query: PageQuery = {}, options?: RequestOptions): Paginated<Result> {
    return this.paginate(`/results/${segment(projectId)}/${segment(sessionId)}`, query, options);
  }

  /** The session's overall score: the maximum over its results. 404 for an unknown session. */
  sessionScore(projectId: string, sessionId: string, options?: RequestOptions): Promise<SessionScore> {
    return this.data({
      method: "GET",
      path: `/results/${segment(projectId)}/${segment(sessionId)}/general`,
      signal: options?.signal,
    });
  }

  /**
   * The session's score within a deadline, for a request handler that must answer anyway.
   * With a `fallback`, a timeout or any error gives the fallback instead of throwing.
   */
  verdict(projectId: string, sessionId: string, options?: { timeoutMs?: number }): Promise<SessionScore>;
  verdict<F>(
    projectId: string,
    sessionId: string,
    options: VerdictOptions<F> & { fallback: F },
  ): Promise<SessionScore | F>;
  async verdict<F>(projectId: string, sessionId: string, options: VerdictOptions<F> = {}): Promise<SessionScore | F> {
    const timeoutMs = Math.max(options.timeoutMs ?? 1500, 0);
    const deadline = performance.now() + timeoutMs;
    // One signal for the whole call, so a 429's retry wait cannot outlast the deadline.
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const score = await this.sessionScore(projectId, sessionId, { signal });
      // The timer fires on a later turn of the event loop, so an answer can beat it and still be
      // late (a deadline of 0 ms, a busy process): a late answer is not the decision's.
      if (performance.now() > deadline) {
        throw new TimeoutError(`No answer within the verdict's deadline of ${timeoutMs} ms`);
      }
      return score;
    } catch (err) {
      if ("fallback" in options) return options.fallback as F;
      throw err;
    }
  }

  /** The project's sessions, most recent activity first, across every page. */
  sessions(projectId: string, query: SessionsQuery = {}, options?: RequestOptions): Paginated<SessionSummary> {
    return this.paginate(`/projects/${segment(projectId)}/sessions`, query, options);
  }

  /** The sessions of one device key (an event's `device`), across every page. */
  deviceSessions(
    projectId: string,
    device: string,
    query: DeviceSessionsQuery = {},
    options?: RequestOptions,
  ): Paginated<SessionSummary> {
    return this.paginate(`/projects/${segment(projectId)}/devices/${segment(device)}/sessions`, query, options);
  }

  // ---- labels and quality ----

  /**
   * Labels one of the project's sessions as a bot or a person (what was learned afterwards: a
   * chargeback, a support ticket). Replaces the session's label if it had one (idempotent).
   * A session the project has no events of is a NotFoundError.
   */
  labelSession(projectId: string, sessionId: string, label: NewLabel, options?: RequestOptions): Promise<Label> {
    return this.data({
      method: "PUT",
      path: `/projects/${segment(projectId)}/sessions/${segment(sessionId)}/label`,
      body: label,
      signal: options?.signal,
    });
  }

  /** The session's label; a NotFoundError when it has none. */
  label(projectId: string, sessionId: string, options?: RequestOptions): Promise<Label> {
    return this.data({
      method: "GET",
      path: `/projects/${segment(projectId)}/sessions/${segment(sessionId)}/label`,
      signal: options?.signal,
    });
  }

  /** Withdraws the session's label; a NotFoundError when it has none. */
  async unlabelSession(projectId: string, sessionId: string, options?: RequestOptions): Promise<void> {
    await this.request({
      method: "DELETE",
      path: `/projects/${segment(projectId)}/sessions/${segment(sessionId)}/label`,
      signal: options?.signal,
    });
  }

  /** The project's labels, by session id, across every page. */
  labels(projectId: string, query: LabelsQuery = {}, options?: RequestOptions): Paginated<Label> {
    return this.paginate(`/projects/${segment(projectId)}/labels`, query, options);
  }

  /**
   * How right the engine was on the sessions labelled in `[from, to)` (by default the last 30
   * days): precision and recall at the webhook threshold, and the reasons behind its mistakes.
   */
  quality(projectId: string, query: QualityQuery = {}, options?: RequestOptions): Promise<Quality> {
    return this.data({
      method: "GET",
      path: `/projects/${segment(projectId)}/quality`,
      query,
      signal: options?.signal,
    });
  }

  // ---- webhooks ----

  /**
   * Registers a webhook. The API answers no body, only `Location`; its id is returned so that
   * the webhook's secret can be read next.
   */
  async createWebhook(projectId: string, webhook: NewWebhook, options?: RequestOptions): Promise<{ id: string; location: string }> {
    const { response } = await this.request({
      method: "POST",
      path: `/projects/${segment(projectId)}/webhooks`,
      body: webhook,
      signal: options?.signal,
    });
    const location = response.headers.get("location") ?? "";
    return { id: decodeURIComponent(location.slice(location.lastIndexOf("/") + 1)), location };
  }

  webhooks(projectId: string, options?: RequestOptions): Promise<Webhook[]> {
    return this.data({ method: "GET", path: `/projects/${segment(projectId)}/webhooks`, signal: options?.signal });
  }

  async deleteWebhook(projectId: string, webhookId: string, options?: RequestOptions): Promise<void> {
    await this.request({
      method: "DELETE",
      path: `/projects/${segment(projectId)}/webhooks/${segment(webhookId)}`,
      signal: options?.signal,
    });
  }

  /** The webhook's `whsec_...` secret; null for a webhook older than secrets per webhook. */
  async webhookSecret(projectId: string, webhookId: string, options?: RequestOptions): Promise<string | null> {
    const data = await this.data<{ secret: string | null }>({
      method: "GET",
      path: `/projects/${segment(projectId)}/webhooks/${segment(webhookId)}/secret`,
      signal: options?.signal,
    });
    return data.secret;
  }

  /** A new secret; the previous one keeps signing during the overlap (24 h by default). */
  async rotateWebhookSecret(projectId: string, webhookId: string, options?: RequestOptions): Promise<string | null> {
    const data = await this.data<{ secret: string | null }>({
      method: "POST",
      path: `/projects/${segment(projectId)}/webhooks/${segment(webhookId)}/secret/rotate`,
      signal: options?.signal,
    });
    return data.secret;
  }

  /** Queues a signed `webhook.test` delivery to the webhook. */
  testWebhook(projectId: string, webhookId: string, options?: RequestOptions): Promise<Queued> {
    return this.data({
      method: "POST",
      path: `/projects/${segment(projectId)}/webhooks/${segment(webhookId)}/test`,
      signal: options?.signal,
    });
  }

  /** The webhook's newest 100 deliveries, newest first. */
  deliveries(projectId: string, webhookId: string, options?: RequestOptions): Promise<Delivery[]> {
    return this.data({
      method: "GET",
      path: `/projects/${segment(projectId)}/webhooks/${segment(webhookId)}/deliveries`,
      signal: options?.signal,
    });
  }

  /** Sends a delivery again, with the same body and webhook-id. */
  redeliver(projectId: string, deliveryId: string, options?: RequestOptions): Promise<Queued> {
    return this.data({
      method: "POST",
      path: `/projects/${segment(projectId)}/deliveries/${segment(deliveryId)}/redeliver`,
      signal: options?.signal,
    });
  }

  // ---- framework glue ----

  /**
   * Express middleware that gives each visitor a session (cookie) and a fresh session token,
   * in `res.locals.vigil` ({ available: true, projectId, publicKey, sessionId, sessionToken }).
   * The project's keys are read once (within `timeoutMs`, 2000 by default; concurrent requests
   * share the read). Without them, `onError` decides: "open" (the default) serves the request
   * with `res.locals.vigil.available === false`, "closed" answers 503 with a JSON message.
   */
  express(options: ExpressOptions): Middleware {
    return expressMiddleware((id, { signal }) => this.project(id, { signal }), options);
  }

  // ---- transport ----

  private paginate<T>(path: string, query: Query, options: RequestOptions | undefined): Paginated<T> {
    const self = this;
    return new Paginated<T>(async function* () {
      let call: Call = { method: "GET", path, query, signal: options?.signal };
      for (;;) {
        const { body, response } = await self.request(call);
        // The results route answers `data: null` for a session with none.
        yield ((body as { data: T[] | null }).data ?? []);
        const next = nextLink(response.headers.get("link"));
        if (next === undefined) return;
        // Followed exactly as given: the cursor and the page size are in it.
        call = { method: "GET", path: new URL(next, self.baseUrl), signal: options?.signal };
      }
    });
  }

  private async data<T>(call: Call): Promise<T> {
    const { body } = await this.request(call);
    return (body as { data: T }).data;
  }

  private url(path: string | URL, query: Query | undefined): URL {
    if (path instanceof URL) return path;
    const url = new URL(`${this.baseUrl}/v1${path}`);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  private async request(call: Call): Promise<{ body: unknown; response: Response }> {
    const url = this.url(call.path, call.query);
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.#apiKey}`,
      Accept: "application/json",
      "User-Agent": `vigil-client-node/${VERSION}`,
      ...call.headers,
    };
    let payload: string | undefined;
    if (call.body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(call.body);
    }

    for (let attempt = 0; ; attempt++) {
      const { response, text } = await this.attempt(url, call.method, headers, payload, call.signal);
      const rateLimit = parseRateLimit(response.headers);
      if (rateLimit) this.rateLimit = rateLimit;

      if (response.ok) return { body: parseBody(text, response), response };

      if (response.status === 429 && attempt < this.maxRetries) {
        // A 429 is refused before anything is done, so any method may be retried.
        const seconds = Math.min(parseRetryAfter(response.headers.get("retry-after")) ?? 1, MAX_RETRY_WAIT_SECONDS);
        try {
          await sleep(seconds * 1000, call.signal);
        } catch {
          throw abortError(call.signal as AbortSignal);
        }
        continue;
      }
      throw errorFor(response.status, errorMessage(text, response), response.headers);
    }
  }

  /** One HTTP exchange, body read included, under `timeoutMs` and the caller's signal. */
  private async attempt(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ response: Response; text: string }> {
    if (signal?.aborted) throw abortError(signal);
    // AbortSignal.any is Node 20.3+; joining by hand keeps Node 18 supported.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const response = await fetch(url, { method, headers, body, signal: controller.signal, redirect: "error" });
      return { response, text: await response.text() };
    } catch (cause) {
      if (signal?.aborted) throw abortError(signal);
      if (timedOut) throw new TimeoutError(`No answer from ${url.origin} within ${this.timeoutMs} ms`, { cause });
      throw new ConnectionError(`Could not reach ${url.origin}: ${describe(cause)}`, { cause });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

function idempotency(options: CreateOptions | undefined): Record<string, string> | undefined {
  return options?.idempotencyKey === undefined ? undefined : { "Idempotency-Key": options.idempotencyKey };
}

/** The API's `{"message"}`, else the status line: proxies in front may answer HTML. */
function errorMessage(text: string, response: Response): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && typeof (parsed as { message?: unknown }).message === "string") {
      return (parsed as { message: string }).message;
    }
  } catch {
    // not JSON
  }
  return `${response.status} ${response.statusText}`.trim();
}

/** A success's JSON; anything else (a proxy's HTML page) is a VigilError like other failures. */
function parseBody(text: string, response: Response): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new VigilError(`The answer (${response.status}) is not JSON`, response.status, response.headers, { cause });
  }
}

function describe(cause: unknown): string {
  // undici wraps the socket error ("ECONNREFUSED") as `cause` of a generic "fetch failed".
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause;
  return inner instanceof Error ? inner.message : String(inner);
}
