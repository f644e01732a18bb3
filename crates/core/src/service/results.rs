//! A session's v1 results and its overall score, as its owner reads them.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::{AccountId, ProjectId, ResultPosition, SessionId, SessionScore};
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
        self.check_owner(account, project).await?;
        Ok(self.store.results(project, session, limit, after).await?)
    }

    pub async fn session_score(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
    ) -> ServiceResult<SessionScore> {
        self.check_owner(account, project).await?;
        self.store
            .session_score(project, session)
            .await?
            .ok_or(ServiceError::SessionNotFound)
    }
}
