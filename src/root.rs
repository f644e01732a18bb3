//! The composition root: the one place where a store, the detection engine, the service and the
//! webhook dispatcher are put together. The Lambda functions ([`crate::lambda`]), `vigil serve`
//! and the rest of the `vigil` command ([`crate::cli`]) are doors that call these and nothing
//! else to build what they serve.

use std::path::Path;
use std::sync::Arc;

use vigil_core::config::Config;
use vigil_core::domain::UrlPolicy;
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_detect::{DataError, Engine};
use vigil_dispatch::{Dispatcher, HttpDirectories, Sender, SystemResolver};
use vigil_store_dynamo::DynamoStore;

/// The DynamoDB store of the configured table.
pub async fn dynamo(config: &Config) -> DynamoStore {
    DynamoStore::from_env(config.table.clone()).await
}

/// The same, its connection opened before the first request (a function's cold start).
pub async fn warm_dynamo(config: &Config) -> DynamoStore {
    let store = dynamo(config).await;
    store.warm().await;
    store
}

/// The detection engine: on the data compiled into the binary, or on the files of `data`.
pub fn engine(data: Option<&Path>) -> Result<Engine, DataError> {
    match data {
        Some(dir) => Engine::load(dir),
        None => Engine::embedded(),
    }
}

/// The service over `store`, counting visits at or above the webhook threshold as flagged.
pub fn service<S>(store: S, policy: UrlPolicy, config: &Config) -> Vigil<S> {
    Vigil::new(store, policy)
        .with_threshold(config.webhook_threshold)
        .with_secret_overlap(config.secret_overlap)
}

/// The same, evaluating visits with `engine` (the events and collect routes) and fetching Web
/// Bot Auth key directories under `directories` (public https only, unless it allows loopback).
pub fn detecting<S>(
    store: S,
    policy: UrlPolicy,
    directories: UrlPolicy,
    config: &Config,
    engine: Engine,
) -> Result<Vigil<S, Detecting>, reqwest::Error> {
    let fetcher = HttpDirectories::new(directories, Arc::new(SystemResolver))?;
    Ok(service(store, policy, config)
        .with_engine(Arc::new(engine))
        .with_directory_fetcher(fetcher))
}

/// The webhook dispatcher over `store`, sending under `policy` with the system's resolver.
pub fn dispatcher<S: vigil_core::store::ProjectStore + vigil_core::store::DeliveryStore>(
    store: S,
    policy: UrlPolicy,
    config: &Config,
) -> Result<Dispatcher<S>, reqwest::Error> {
    let sender = Sender::new(policy, Arc::new(SystemResolver))?;
    Ok(Dispatcher::new(store, sender, config))
}
