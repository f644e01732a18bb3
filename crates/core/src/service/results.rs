//! A session's v1 results, its events and its overall score, as its owner reads them.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::{
    AccountId, Event, EventId, ProjectId, ResultPosition, SessionId, SessionScore,
};
use crate::store::{ProjectStore, ResultPage, ResultStore};

impl<S: ProjectStore + ResultStore, D> Vigil<S, D> {
    pub async fn results(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
        limit: usize,
        after: Option<ResultPosition>,
    ) -> ServiceResult<ResultPage> {
        self.projects().check_owner(account, project).await?;
        Ok(self.store.results(project, session, limit, after).await?)
    }

    pub async fn session_score(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
    ) -> ServiceResult<SessionScore> {
        self.projects().check_owner(account, project).await?;
        self.store
            .session_score(project, session)
            .await?
            .ok_or(ServiceError::SessionNotFound)
    }
}

impl<S: ProjectStore + ResultStore, D> Vigil<S, D> {
    /// A page of the session's events, newest first (the same order and cursors as results).
    pub async fn events(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
        limit: usize,
        after: Option<crate::domain::ResultPosition>,
    ) -> ServiceResult<ResultPage> {
        self.results(account, project, session, limit, after).await
    }

    pub async fn event(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
        id: EventId,
    ) -> ServiceResult<Event> {
        self.projects().check_owner(account, project).await?;
        self.store
            .event(project, session, id.position())
            .await?
            .ok_or(ServiceError::EventNotFound)
    }
}
