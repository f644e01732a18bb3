export { Vigil, Paginated, VERSION } from "./client.js";
export type {
  VigilOptions,
  RequestOptions,
  CreateOptions,
  VerdictOptions,
  ProjectSealedExpectations,
  OpenSealedOptions,
} from "./client.js";
export {
  VigilError,
  AuthenticationError,
  ForbiddenError,
  NotFoundError,
  ConflictError,
  ValidationError,
  RateLimitError,
  ConnectionError,
  TimeoutError,
  WebhookVerificationError,
  SealedVerdictError,
} from "./errors.js";
export type { SealedVerdictReason } from "./errors.js";
export type { SealedVerdict, SealedExpectations, SealingKeyInput, SealingKeysInput } from "./sealed.js";
export type { RateLimit, RateLimitPolicy } from "./ratelimit.js";
export type {
  ExpressOptions,
  ExpressOnError,
  ExpressErrorHandler,
  VigilLocals,
  VigilUnavailable,
  VigilPageLocals,
  Middleware,
  RequestLike,
  ResponseLike,
} from "./express.js";
export type { HeadersInput } from "./webhooks.js";
export type * from "./types.js";
// The full generated schema, for anything the aliases above do not name.
export type { components, operations, paths } from "./openapi.js";
