//! The domain: validated values and the rules of the service, free of HTTP and storage concerns.

pub mod calibration;
pub mod change;
pub mod cursor;
pub mod delivery;
pub mod device;
pub mod evaluation;
pub mod event;
pub mod idempotency;
pub mod ids;
pub mod insight;
pub mod label;
pub mod model;
pub mod plan;
pub mod project;
pub mod score;
pub mod sealing;
pub mod session;
pub mod session_token;
pub mod time;
pub mod token;
pub mod velocity;
pub mod webhook;

pub use change::{FeedEvent, SessionChanged};
pub use delivery::{Attempt, AttemptOutcome, Delivery, DeliveryStatus, DeliveryView};
pub use device::DeviceKey;
pub use evaluation::{AddressedEvidence, Evaluation, Flagged};
pub use event::{Event, EventId};
pub use ids::{AccountId, DeliveryId, IdError, PlanId, ProjectId, SessionId, WebhookId};
pub use model::{
    Account, CheckResult, NewResult, Plan, PlanStatus, Project, ResultPosition, SessionScore,
};
pub use score::Score;
pub use time::{Clock, ManualClock, SystemClock, Timestamp};
pub use webhook::{UrlPolicy, Webhook, WebhookType, WebhookUrl};
