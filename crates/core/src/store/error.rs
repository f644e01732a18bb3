//! Storage failures: what the traits in [`super`] return when a backend call fails.
//! Its own file so the layout and plan modules can name it without importing the traits' module.

/// The error behind a storage failure, kept whole for the logs.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A storage failure. Its cause is for logs only ([`crate::report::Chain`]); the HTTP layer
/// answers with a generic message.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend refused for capacity reasons even after the SDK's retries.
    #[error("storage throttled")]
    Throttled(#[source] Cause),
    /// A stored item could not be read back into a domain value.
    #[error("malformed stored item")]
    Corrupt(#[source] Cause),
    /// Anything else: network, permissions, missing table, a lock held too long.
    #[error("storage failure")]
    Backend(#[source] Cause),
}

/// A failed storage operation, named: the cause of a [`StoreError`] from a backend call.
#[derive(Debug, thiserror::Error)]
#[error("{op}")]
pub struct OpFailed {
    pub op: &'static str,
    #[source]
    pub source: Cause,
}

impl OpFailed {
    pub fn cause(op: &'static str, source: impl Into<Cause>) -> Cause {
        Box::new(Self {
            op,
            source: source.into(),
        })
    }
}
