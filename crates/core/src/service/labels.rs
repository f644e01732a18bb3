//! Labels from the customer: a session marked `bot` or `human` afterwards, and how right the
//! engine was on the labelled sessions (precision and recall at the webhook threshold, and the
//! reasons behind its mistakes). A label never changes a stored score.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::label::{Label, LabelSpec, Quality, quality};
use crate::domain::{AccountId, ProjectId, SessionId, Timestamp};
use crate::store::{LabelStore, ProjectStore, ResultStore};

/// The most labels a quality report reads (a hundred pages).
pub const MAX_QUALITY_LABELS: usize = 10_000;
/// Events of a session whose reasons a label keeps: its newest page.
const LABEL_EVENTS: usize = 100;

/// A page of labels, and whether more follow.
pub struct LabelPage {
    pub labels: Vec<Label>,
    pub more: bool,
}

impl<S: ProjectStore + ResultStore + LabelStore, D> Vigil<S, D> {
    /// Labels one of the project's sessions (replacing its label, if any): idempotent. The
    /// session must be the project's: a label cannot name a session the project never saw.
    pub async fn label_session(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
        spec: LabelSpec,
    ) -> ServiceResult<Label> {
        self.projects().check_owner(account, project).await?;
        let (score, page) = tokio::join!(
            self.store.session_score(project, session),
            self.store.results(project, session, LABEL_EVENTS, None),
        );
        let score = score?.ok_or(ServiceError::SessionNotFound)?;
        // The reasons of its events, most frequent first, as the engine gave them.
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        let page = page?;
        for (_, event) in &page.results {
            for r in &event.reasons {
                *counts.entry(r.code.name()).or_default() += 1;
            }
        }
        let mut reasons: Vec<(&str, usize)> = counts.into_iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let label = Label {
            session_id: session.clone(),
            label: spec.label,
            reason: spec.reason,
            note: spec.note,
            labelled_at: self.now(),
            score_bot: score.score_bot,
            reasons: reasons.into_iter().map(|(c, _)| c.to_owned()).collect(),
        };
        self.store.put_label(project, &label).await?;
        Ok(label)
    }

    /// A session's label.
    pub async fn label(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
    ) -> ServiceResult<Label> {
        self.projects().check_owner(account, project).await?;
        self.store
            .label(project, session)
            .await?
            .ok_or(ServiceError::LabelNotFound)
    }

    /// Withdraws a session's label.
    pub async fn unlabel_session(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
    ) -> ServiceResult<()> {
        self.projects().check_owner(account, project).await?;
        if self.store.delete_label(project, session).await? {
            Ok(())
        } else {
            Err(ServiceError::LabelNotFound)
        }
    }

    /// A page of the project's labels, by session id.
    pub async fn labels(
        &self,
        account: &AccountId,
        project: &ProjectId,
        limit: usize,
        after: Option<&SessionId>,
    ) -> ServiceResult<LabelPage> {
        self.projects().check_owner(account, project).await?;
        let mut labels = self.store.labels(project, after, limit + 1).await?;
        let more = labels.len() > limit;
        labels.truncate(limit);
        Ok(LabelPage { labels, more })
    }

    /// How right the engine was on the sessions labelled in `[from, to)`, at the webhook
    /// threshold.
    pub async fn quality(
        &self,
        account: &AccountId,
        project: &ProjectId,
        from: Timestamp,
        to: Timestamp,
    ) -> ServiceResult<Quality> {
        self.projects().check_owner(account, project).await?;
        let in_range = |l: &Label| from <= l.labelled_at && l.labelled_at < to;
        let all = self
            .labels_where(project, in_range, MAX_QUALITY_LABELS)
            .await?;
        Ok(quality(&all, self.webhook_policy.threshold))
    }
}

impl<S: LabelStore, D> Vigil<S, D> {
    /// The project's labels that `keep` accepts, by session id, among at most about `most` of
    /// them read (a page of 100 at a time): a filter that matches none still stops there.
    pub(super) async fn labels_where(
        &self,
        project: &ProjectId,
        keep: impl Fn(&Label) -> bool,
        most: usize,
    ) -> ServiceResult<Vec<Label>> {
        read_where(
            |after| async move { self.store.labels(project, after.as_ref(), LABEL_PAGE).await },
            keep,
            most,
        )
        .await
    }
}

/// Labels read per store call.
const LABEL_PAGE: usize = 100;

/// Pages of labels from `page(after)` until one comes back short or `most` were read, keeping
/// those `keep` accepts.
async fn read_where<F, Fut>(
    mut page: F,
    keep: impl Fn(&Label) -> bool,
    most: usize,
) -> ServiceResult<Vec<Label>>
where
    F: FnMut(Option<SessionId>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Label>, crate::store::StoreError>>,
{
    let mut all = Vec::new();
    let (mut after, mut read) = (None, 0);
    while read < most {
        let got = page(after).await?;
        let done = got.len() < LABEL_PAGE;
        read += got.len();
        after = got.last().map(|l| l.session_id.clone());
        all.extend(got.into_iter().filter(&keep));
        if done {
            break;
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project with 5,000 labels, none in the range asked: reading stops at the bound (two
    /// pages for 200) instead of paging through all of them.
    #[tokio::test]
    async fn a_range_that_matches_none_reads_at_most_the_bound() {
        let calls = std::cell::Cell::new(0);
        let label = |i: usize| Label {
            session_id: SessionId::parse(format!("s{i:05}")).unwrap(),
            label: crate::domain::label::Truth::Bot,
            reason: None,
            note: None,
            labelled_at: Timestamp::from_unix_millis(0).unwrap(),
            score_bot: crate::domain::Score::new(0.5).unwrap(),
            reasons: Vec::new(),
        };
        let got = read_where(
            |after: Option<SessionId>| {
                calls.set(calls.get() + 1);
                let from = after.map_or(0, |a| a.as_str()[1..].parse::<usize>().unwrap() + 1);
                async move { Ok((from..(from + LABEL_PAGE).min(5_000)).map(label).collect()) }
            },
            |_| false,
            200,
        )
        .await
        .unwrap();
        assert!(got.is_empty());
        assert_eq!(calls.get(), 2);
    }
}
