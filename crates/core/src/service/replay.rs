//! The one idempotent-replay path: a request with a used key is answered as the key's first
//! request was, from what that request created, and only if it is the same request.

use std::future::Future;

use super::error::{ServiceError, ServiceResult};
use crate::domain::idempotency::{Created, Once, Used};
use crate::domain::{AccountId, Event, Project, ResultPosition};
use crate::store::{IdempotencyStore, ProjectStore, ResultStore};

/// What a key's first request created, read back for its retries.
pub trait Replay<S>: Sized {
    fn read_back(store: &S, created: Created) -> impl Future<Output = ServiceResult<Self>> + Send;
}

impl<S: ResultStore> Replay<S> for Event {
    async fn read_back(store: &S, created: Created) -> ServiceResult<Self> {
        let Created::Event {
            project_id,
            session_id,
            created_at,
            seq,
        } = created
        else {
            return Err(ServiceError::IdempotencyMismatch);
        };
        let at = ResultPosition { created_at, seq };
        let event = store.event(&project_id, &session_id, at).await?;
        event.ok_or(ServiceError::EventNotFound)
    }
}

impl<S: ProjectStore> Replay<S> for Project {
    async fn read_back(store: &S, created: Created) -> ServiceResult<Self> {
        let Created::Project { project_id } = created else {
            return Err(ServiceError::IdempotencyMismatch);
        };
        let project = store.project(&project_id).await?;
        project.ok_or(ServiceError::ProjectNotFound)
    }
}

/// The answer to a retry whose key is already used, before anything else is checked (as the
/// first request was); None when there is no key or it is unused.
pub(super) async fn first<S: IdempotencyStore, T: Replay<S>>(
    store: &S,
    account: &AccountId,
    once: Option<&Once>,
) -> ServiceResult<Option<T>> {
    let Some(o) = once else { return Ok(None) };
    match store.used_key(account, &o.key, o.at).await? {
        Some(used) => answer(store, Some(o), used).await.map(Some),
        None => Ok(None),
    }
}

/// The answer to a request whose write found its key used (a concurrent twin won): what the key
/// created, if the request is the same.
pub(super) async fn answer<S, T: Replay<S>>(
    store: &S,
    once: Option<&Once>,
    used: Used,
) -> ServiceResult<T> {
    match once {
        Some(o) if used.fingerprint == o.fingerprint => T::read_back(store, used.created).await,
        _ => Err(ServiceError::IdempotencyMismatch),
    }
}
