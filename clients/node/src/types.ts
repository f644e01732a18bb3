// Public names for the API's schemas. Every type here is an alias into the generated
// src/openapi.ts, so the package's types change exactly when openapi.yaml does.
import type { components, operations } from "./openapi.js";

type Schemas = components["schemas"];

export type Plan = Schemas["Plan"];
export type Usage = Schemas["Usage"];
export type Project = Schemas["Project"];
export type NewProject = Schemas["NewProject"];
export type ProjectChanges = Schemas["ProjectChanges"];
export type AgentPolicy = Schemas["AgentPolicy"];
export type Result = Schemas["Result"];
export type SessionScore = Schemas["SessionScoreData"]["data"];
export type Event = Schemas["Event"];
/** What a backend saw of a visit: `ipAddress` is required, the rest sharpens the verdict. */
export type NewEvent = Schemas["NewEvent"];
export type EventSignals = Schemas["EventSignals"];
export type Reason = Schemas["Reason"];
export type Agent = Schemas["Agent"];
export type AgentStatus = Schemas["AgentStatus"];
export type SessionSummary = Schemas["SessionSummary"];
export type StatsBucket = Schemas["StatsBucket"];
export type Webhook = Schemas["Webhook"];
export type NewWebhook = Schemas["NewWebhook"];
export type WebhookType = NewWebhook["type"];
export type Delivery = Schemas["Delivery"];
/** A key that opens the project's sealed verdicts: a JWK (`kty: oct`) and when it stops being listed. */
export type SealingKey = Schemas["SealingKey"];
/** Whether the project seals its visits' verdicts, and the keys that open them (current first). */
export type SealingKeys = Schemas["SealingKeysEnvelope"]["data"];
/** The answer of the test and redelivery routes: the queued delivery's id. */
export type Queued = Schemas["QueuedEnvelope"]["data"];
/** What the customer learned of a session afterwards: `label` (bot or human), and an optional `reason` code and `note`. */
export type NewLabel = Schemas["NewLabel"];
/** A session's label, with its `scoreBot` and reason codes when it was labelled. */
export type Label = Schemas["Label"];
/** A label's verdict: `"bot"` or `"human"`. */
export type LabelKind = Label["label"];
/** Precision and recall of the engine on the sessions labelled in a range. */
export type Quality = Schemas["Quality"];
/** Reason codes with how many sessions had each, most first: `[code, count]` pairs. */
export type ReasonCounts = Schemas["ReasonCounts"];

/** Filters of the sessions list (the cursor is the client's business, not the caller's). */
export type SessionsQuery = Omit<NonNullable<operations["listSessions"]["parameters"]["query"]>, "cursor">;
/** Filters of a device key's sessions list. */
export type DeviceSessionsQuery = Omit<
  NonNullable<operations["listDeviceSessions"]["parameters"]["query"]>,
  "cursor"
>;
/** The statistics' range and bucket size. */
export type StatsQuery = NonNullable<operations["getStats"]["parameters"]["query"]>;
/** Page size of the labels list (the iterator still walks every page). */
export type LabelsQuery = Omit<NonNullable<operations["listLabels"]["parameters"]["query"]>, "cursor">;
/** The range of labels the quality is computed over (`[from, to)`, by default the last 30 days). */
export type QualityQuery = NonNullable<operations["getQuality"]["parameters"]["query"]>;
/** Page size of the results and events lists (1..100; the iterator still walks every page). */
export type PageQuery = Omit<NonNullable<operations["listResults"]["parameters"]["query"]>, "cursor">;

/**
 * A webhook delivery's body. openapi.yaml describes routes only, not what Vigil POSTs to a
 * receiver, so this one is written by hand from docs/integrate.md ("Webhook delivery").
 */
export type WebhookEvent =
  | {
      type: WebhookType;
      timestamp: string;
      data: Result & {
        projectId: string;
        sessionId: string;
        /** Present for deliveries of events (the event that made the session cross). */
        id?: string;
        reasons?: Reason[];
      };
    }
  | {
      type: "webhook.test";
      timestamp: string;
      data: { projectId: string; webhookId: string };
    };
