//! Who a caller is: a developer key's account and plan. What it owns is asked of
//! [`Projects::check_owner`](super::projects::Projects::check_owner), which every per-project
//! operation calls first.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::plan::Principal;
use crate::domain::token::ApiKey;
use crate::store::{AccountStore, KeyStore};

impl<S: KeyStore + AccountStore, D> Vigil<S, D> {
    /// The account that owns a developer key, with its plan's terms. Only the key's hash is
    /// looked up; a key whose account is gone authenticates nothing.
    pub async fn authenticate(&self, key: &ApiKey) -> ServiceResult<Principal> {
        let account = self
            .store
            .key_account(&key.hash())
            .await?
            .ok_or(ServiceError::Unauthorized)?;
        let plan = self.plans().plan(&account).await?;
        Ok(Principal {
            account,
            terms: plan.terms(),
            plan: Some(plan),
        })
    }
}
