// Express middleware, typed structurally so that the package needs no dependency on express:
// anything with Node's request headers and a response with `locals` and `setHeader` fits
// (Express 4 and 5, and Connect-style servers that add `locals`).
import { randomBytes } from "node:crypto";
import { sessionToken } from "./tokens.js";
import type { Project } from "./types.js";

export interface ExpressOptions {
  /** The project whose page the agent runs on. */
  project: string;
  /** The project's `apiKeyPrivate`; read once from the API when not given. */
  projectSecret?: string;
  /** The cookie naming the visitor's session. */
  cookie?: string;
  /** How long a minted token is valid (at most 86400). */
  ttlSeconds?: number;
}

/** What the middleware leaves in `res.locals.vigil` for the page template. */
export interface VigilLocals {
  projectId: string;
  /** The project's `apiKeyPublic`, for `Vigil.collect({ publicKey })` on the page. */
  publicKey: string;
  sessionId: string;
  sessionToken: string;
}

export interface RequestLike {
  headers: { cookie?: string | undefined };
  /** Express sets it for https (or a trusted proxy's X-Forwarded-Proto). */
  secure?: boolean;
}

export interface ResponseLike {
  locals: Record<string, unknown>;
  getHeader(name: string): number | string | string[] | undefined;
  setHeader(name: string, value: string | string[]): unknown;
}

export type Middleware = (req: RequestLike, res: ResponseLike, next: (err?: unknown) => void) => void;

// A session id as the API takes it (letters, digits, `_ . : -`, at most 128, not only dots).
const SESSION_ID = /^(?=.*[A-Za-z0-9_:-])[A-Za-z0-9_.:-]{1,128}$/;

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

export function expressMiddleware(getProject: (id: string) => Promise<Project>, options: ExpressOptions): Middleware {
  const { project: projectId, cookie = "vigil_session", ttlSeconds = 3600 } = options;
  // The project's keys change only by rotation, so one read serves the process; a failed read is
  // forgotten so that the next request tries again instead of failing forever.
  let keys: Promise<{ publicKey: string; secret: string }> | undefined;
  const projectKeys = () =>
    (keys ??= getProject(projectId).then(
      (p) => ({ publicKey: p.apiKeyPublic, secret: options.projectSecret ?? p.apiKeyPrivate }),
      (err: unknown) => {
        keys = undefined;
        throw err;
      },
    ));

  return (req, res, next) => {
    let sessionId = readCookie(req.headers.cookie, cookie);
    if (sessionId === undefined || !SESSION_ID.test(sessionId)) {
      sessionId = `sess_${randomBytes(16).toString("hex")}`;
      const secure = req.secure ? "; Secure" : "";
      appendSetCookie(res, `${cookie}=${sessionId}; Path=/; HttpOnly; SameSite=Lax${secure}`);
    }
    const id = sessionId;
    projectKeys()
      .then(({ publicKey, secret }) => {
        const locals: VigilLocals = {
          projectId,
          publicKey,
          sessionId: id,
          sessionToken: sessionToken(secret, id, ttlSeconds),
        };
        res.locals.vigil = locals;
      })
      // Errors (the project read, a bad ttlSeconds) go to the app's error handler.
      .then(() => next(), (err: unknown) => next(err));
  };
}
