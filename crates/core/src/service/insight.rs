//! A project's sessions and statistics, for its owner only.

use super::error::ServiceResult;
use super::vigil::Vigil;
use crate::domain::insight::{Bucket, SessionPage, SessionQuery, StatsRange};
use crate::domain::{AccountId, ProjectId};
use crate::store::{InsightStore, ProjectStore};

impl<S: ProjectStore + InsightStore, D> Vigil<S, D> {
    /// A page of the project's sessions, most recently seen first.
    pub async fn sessions(
        &self,
        account: &AccountId,
        project: &ProjectId,
        query: &SessionQuery,
    ) -> ServiceResult<SessionPage> {
        self.projects().check_owner(account, project).await?;
        Ok(self.store.sessions(project, query).await?)
    }

    /// The project's statistics over `range`, one bucket per hour or day.
    pub async fn stats(
        &self,
        account: &AccountId,
        project: &ProjectId,
        range: &StatsRange,
    ) -> ServiceResult<Vec<Bucket>> {
        self.projects().check_owner(account, project).await?;
        Ok(self.store.stats(project, range).await?)
    }
}
