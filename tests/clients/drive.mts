// Drives `vigil serve` with openapi-fetch over the types openapi-typescript generated from
// openapi.yaml (tests/clients.rs compiles this with tsc --strict, then runs it): the calls below
// type-check against the generated `paths`, and every answer is the documented success.
// Usage: node drive.mjs BASE_URL KEY PROJECT SESSION
import createClient from "openapi-fetch";
import type { paths, components } from "./vigil.mjs";

// Node's own globals, without @types/node.
declare const process: { argv: string[]; exit(code: number): never };

const [base, key, project, session] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${key}` } });
const checked: string[] = [];

function ok<T>(name: string, r: { data?: T; error?: unknown; response: Response }): T {
  const data = r.data;
  if (r.error !== undefined || data === undefined || !r.response.ok) {
    console.error(`${name}: ${r.response.status} ${JSON.stringify(r.error)}`);
    process.exit(1);
  }
  checked.push(name);
  return data;
}

const signals: components["schemas"]["EventSignals"] = {
  webdriver: false,
  uaData: { brands: [{ brand: "Chromium", version: "156" }], mobile: false, platform: "Linux" },
  languages: ["de-DE"], timeZone: "Europe/Berlin", screenWidth: 1920, screenHeight: 1080,
  activity: { action: "checkout", elapsedMs: 5200, moves: 40, presses: 2, keys: 12 },
};
const path = { projectId: project, sessionId: session };
const created = ok("createEvent", await client.POST("/projects/{projectId}/sessions/{sessionId}/events", {
  params: { path },
  body: {
    ipAddress: "84.128.0.10",
    userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
    signals,
  },
}));
const event: components["schemas"]["Event"] = created.data;
ok("getEvent", await client.GET("/projects/{projectId}/sessions/{sessionId}/events/{eventId}", {
  params: { path: { ...path, eventId: event.id } },
}));
ok("listEvents", await client.GET("/projects/{projectId}/sessions/{sessionId}/events", { params: { path } }));
ok("listResults", await client.GET("/results/{projectId}/{sessionId}", { params: { path } }));
ok("sessionScore", await client.GET("/results/{projectId}/{sessionId}/general", { params: { path } }));
ok("getPlan", await client.GET("/plan"));
ok("getProject", await client.GET("/projects/{projectId}", { params: { path: { projectId: project } } }));
ok("listProjects", await client.GET("/projects"));
ok("getUsage", await client.GET("/usage"));
ok("listWebhooks", await client.GET("/projects/{projectId}/webhooks", { params: { path: { projectId: project } } }));
ok("listSessions", await client.GET("/projects/{projectId}/sessions", {
  params: { path: { projectId: project }, query: { minScoreBot: 0 } },
}));
ok("getStats", await client.GET("/projects/{projectId}/stats", {
  params: { path: { projectId: project }, query: { granularity: "day" } },
}));
console.log(`typescript client: ${checked.length} answers: ${checked.join(", ")}; event ${event.id} ` +
  `scoreBot ${event.scoreBot} reasons ${event.reasons.map((r) => r.code).join(",")}`);
