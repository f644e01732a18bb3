//! What a service operation can refuse or fail with: one error type for every resource, so the
//! HTTP layer maps each variant to a status in one place.

use crate::domain::plan::Refusal;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("not authenticated")]
    Unauthorized,
    #[error("project not found")]
    ProjectNotFound,
    #[error("session not found")]
    SessionNotFound,
    #[error("label not found")]
    LabelNotFound,
    /// Calibration needs [`crate::domain::calibration::MIN_LABELS_EACH`] admitted labels of each
    /// kind.
    #[error(
        "calibration needs {min} admitted labels of each kind; the project has {bots} bots and {humans} humans",
        min = crate::domain::calibration::MIN_LABELS_EACH
    )]
    TooFewLabels { bots: usize, humans: usize },
    #[error("webhook not found")]
    WebhookNotFound,
    #[error("delivery not found")]
    DeliveryNotFound,
    #[error("the project already has this webhook")]
    WebhookDuplicate,
    #[error("the project has the most webhooks allowed")]
    WebhookLimit,
    /// The webhook's test events of the last minute are at [`TEST_BUDGET`], or its account's of
    /// this minute at [`ACCOUNT_TEST_BUDGET`]; retry after this many seconds.
    ///
    /// [`TEST_BUDGET`]: super::webhooks::TEST_BUDGET
    /// [`ACCOUNT_TEST_BUDGET`]: super::webhooks::ACCOUNT_TEST_BUDGET
    #[error("the {0:?} test budget is spent")]
    TestBudget(TestBudget, u64),
    #[error("refused by the plan: {0:?}")]
    Refused(Refusal),
    #[error("the account has the most projects its plan allows")]
    ProjectLimit,
    #[error("event not found")]
    EventNotFound,
    #[error("the idempotency key was used with another request")]
    IdempotencyMismatch,
    #[error("the project is disabled")]
    ProjectDisabled,
    #[error("no project has this public key")]
    UnknownPublicKey,
    #[error("the page's origin is not the project's domain")]
    OriginNotAllowed,
    #[error("the project requires a session token")]
    SessionTokenRequired,
    #[error(transparent)]
    SessionToken(#[from] crate::domain::session_token::TokenError),
    #[error("the engine gave a score outside [0, 1]: {0}")]
    EngineFault(f64),
    /// The verdict could not be sealed under the project's key: ours to fix, not the caller's.
    #[error("cannot seal the verdict")]
    Sealing(#[source] crate::domain::sealing::SealError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type ServiceResult<T> = Result<T, ServiceError>;

/// Which test-event budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBudget {
    Webhook,
    Account,
}
