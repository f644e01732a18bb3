//! Calibration: a project's `scoreBot` weights fitted on its own labels (`vigil calibrate`, and
//! the weekly function under AWS), kept only when they beat the shared weights on labels the fit
//! never saw. Nothing here changes a stored score: the weights judge the visits that follow.

use serde::Serialize;

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::calibration::{
    Calibration, MIN_LABELS_EACH, SHARED, admitted, counts, held_out,
};
use crate::domain::label::{Label, Truth};
use crate::domain::{Event, Project, ProjectId, SessionId};
use crate::store::{LabelStore, ProjectStore, ResultStore};
use vigil_detect::Code;
use vigil_detect::calibration::{Example, calibrate};

/// The most labels one calibration reads.
const MAX_LABELS: usize = 10_000;
/// A labelled session's events read for its reasons: its newest page.
const SESSION_EVENTS: usize = 100;
/// Sessions whose events are read at once.
const READS_AT_ONCE: usize = 16;

/// What a calibration did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibrated {
    pub project_id: ProjectId,
    /// Whether the fit beat the shared weights and is now the project's model.
    pub kept: bool,
    /// The fit, kept or not, with its comparison.
    pub calibration: Calibration,
    /// Labels admitted today (at most 200 a day count), and of those the sessions with an
    /// evaluated event to learn from.
    pub admitted: usize,
    pub used: usize,
    /// Labels not admitted yet: a burst waits for later days.
    pub waiting: usize,
}

impl<S: ProjectStore + ResultStore + LabelStore, D> Vigil<S, D> {
    /// Fits the project's weights on its admitted labels and keeps them if they beat the shared
    /// ones on the held-out share. Needs [`MIN_LABELS_EACH`] admitted labels of each kind.
    pub async fn calibrate(&self, project: &ProjectId) -> ServiceResult<Calibrated> {
        let mut p = self
            .store
            .project(project)
            .await?
            .ok_or(ServiceError::ProjectNotFound)?;
        let all = self.labels_where(project, |_| true, MAX_LABELS).await?;
        let total = all.len();
        let labels = admitted(all, self.now());
        let (bots, humans) = counts(&labels);
        if bots < MIN_LABELS_EACH || humans < MIN_LABELS_EACH {
            return Err(ServiceError::TooFewLabels { bots, humans });
        }
        let examples = self.examples(&p, &labels).await?;
        let held = held_out(&labels);
        let (mut train, mut test) = (Vec::new(), Vec::new());
        for (session, example) in &examples {
            if held.get(session).copied().unwrap_or(false) {
                test.push(example.clone());
            } else {
                train.push(example.clone());
            }
        }
        let (weights, comparison) = calibrate(&train, &test, self.webhook_policy.threshold.get());
        let kept = comparison.better();
        let calibration = Calibration {
            version: p.calibration.as_ref().map_or(1, |c| c.version + 1),
            fitted_at: self.now(),
            weights,
            comparison,
        };
        if kept {
            p.calibration = Some(calibration.clone());
            if !self.store.update_project(&p).await? {
                return Err(ServiceError::ProjectNotFound);
            }
            self.projects().forget(&p);
        }
        tracing::info!(
            project = %project, kept, version = calibration.version,
            shared = calibration.comparison.shared_log_loss,
            model = calibration.comparison.model_log_loss,
            "calibrated"
        );
        Ok(Calibrated {
            project_id: project.clone(),
            kept,
            admitted: labels.len(),
            used: examples.len(),
            waiting: total - labels.len(),
            calibration,
        })
    }

    /// Calibrates every labelled project that has enough labels (the weekly function): one
    /// answer per project tried; a project without enough labels is skipped quietly, and one
    /// that fails does not stop the others.
    pub async fn calibrate_all(&self) -> ServiceResult<Vec<ServiceResult<Calibrated>>> {
        let mut out = Vec::new();
        let mut after: Option<ProjectId> = None;
        loop {
            let page = self.store.labelled_projects(after.as_ref(), 100).await?;
            let done = page.len() < 100;
            after = page.last().cloned();
            for project in page {
                match self.calibrate(&project).await {
                    Err(ServiceError::TooFewLabels { .. } | ServiceError::ProjectNotFound) => {}
                    Err(e) => {
                        tracing::warn!(project = %project, error = %crate::report::Chain(&e), "calibration failed");
                        out.push(Err(e));
                    }
                    Ok(c) => out.push(Ok(c)),
                }
            }
            if done {
                return Ok(out);
            }
        }
    }

    /// Each labelled session's example: the bot reasons of the event that gave it its
    /// `scoreBot`, at the shared weights. Sessions without an evaluated event are left out.
    async fn examples(
        &self,
        p: &Project,
        labels: &[Label],
    ) -> ServiceResult<Vec<(SessionId, Example)>> {
        use futures_util::StreamExt as _;
        let reads = futures_util::stream::iter(labels.iter().map(|l| async move {
            let page = self
                .store
                .results(&p.id, &l.session_id, SESSION_EVENTS, None)
                .await?;
            let top = page
                .results
                .into_iter()
                .map(|(_, e)| e)
                .filter(|e| e.engine_version.is_some())
                .max_by(|a, b| {
                    let by_score = a.score_bot.get().total_cmp(&b.score_bot.get());
                    by_score.then(a.id.cmp(&b.id))
                });
            Ok::<_, ServiceError>(top.map(|e| {
                let example = Example::new(shared_weights(p, &e), l.label == Truth::Bot);
                (l.session_id.clone(), example)
            }))
        }))
        .buffered(READS_AT_ONCE);
        let found: Vec<ServiceResult<Option<(SessionId, Example)>>> = reads.collect().await;
        let mut out = Vec::with_capacity(found.len());
        for f in found {
            out.extend(f?);
        }
        Ok(out)
    }
}

/// An event's bot reasons at the weights the shared engine gave them: as stored when it was
/// judged by the shared weights; divided back by the project's calibration when by the current
/// one; the table's weight when by an older calibration (its weights are no longer kept).
fn shared_weights(p: &Project, e: &Event) -> Vec<(Code, f64)> {
    let model = e.model.as_deref().unwrap_or(SHARED);
    let current = p.calibration.as_ref().filter(|c| c.name() == model);
    e.reasons
        .iter()
        .map(|r| {
            let shared = r.code.weight();
            let w = if model == SHARED {
                r.weight
            } else {
                match current.map(|c| c.weights.weight(r.code)) {
                    Some(used) if used > 0.0 => r.weight * shared / used,
                    _ => shared,
                }
            };
            (r.code, w)
        })
        .collect()
}
