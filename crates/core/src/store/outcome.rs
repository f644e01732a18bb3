//! The outcomes of inserts that can be refused without failing: the write layout
//! ([`super::write`]) returns them and the store traits pass them on.

/// The outcome of registering a webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookInsert {
    Created,
    /// The project already has a webhook of this type and URL.
    Duplicate,
    /// The project already has the most webhooks allowed.
    LimitReached,
}

/// The outcome of creating a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectInsert {
    Created,
    LimitReached,
}
