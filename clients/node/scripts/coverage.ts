// Compile-time proof that the client has a method for every route a backend calls with a
// developer key: regenerating src/openapi.ts after a route is added to openapi.yaml makes
// `npm run typecheck` fail here until the route gets a method (or is listed as not for backends).
import type { operations } from "../src/openapi.js";
import type { Vigil } from "../src/client.js";

/** Routes of the browser agent and of the site itself, which take no developer key. */
type NotForBackends =
  | "collect"
  | "collectPreflight"
  | "agentScript"
  | "agentScriptHead"
  | "dashboard"
  | "dashboardHead"
  | "reference"
  | "referenceHead"
  | "referenceRenderer"
  | "referenceRendererHead"
  | "openapiDocument"
  | "openapiDocumentHead";

export const methodForOperation = {
  getPlan: "plan",
  getUsage: "usage",
  listProjects: "projects",
  getProject: "project",
  createProject: "createProject",
  updateProject: "updateProject",
  getStats: "stats",
  createEvent: "createEvent",
  listEvents: "events",
  getEvent: "event",
  listResults: "results",
  sessionScore: "sessionScore",
  listSessions: "sessions",
  listDeviceSessions: "deviceSessions",
  putLabel: "labelSession",
  getLabel: "label",
  deleteLabel: "unlabelSession",
  listLabels: "labels",
  getQuality: "quality",
  getSealingKey: "sealingKey",
  rotateSealingKey: "rotateSealingKey",
  createWebhook: "createWebhook",
  listWebhooks: "webhooks",
  deleteWebhook: "deleteWebhook",
  getWebhookSecret: "webhookSecret",
  rotateWebhookSecret: "rotateWebhookSecret",
  testWebhook: "testWebhook",
  listDeliveries: "deliveries",
  redeliver: "redeliver",
} as const satisfies Record<Exclude<keyof operations, NotForBackends>, keyof Vigil>;
