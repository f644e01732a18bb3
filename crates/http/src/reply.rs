//! A successful answer: `{"data": ...}` with its status and headers, built by handlers and
//! extractors (a page's `Link`) and turned into a response by the pipeline.

use http::{HeaderName, StatusCode, header};
use serde::Serialize;

use crate::error::ApiError;
use crate::message::Response;
use crate::response::{json_response, set_header};

/// A successful answer: `{"data": ...}` with its status and headers.
pub struct Reply<T> {
    status: StatusCode,
    data: T,
    headers: Vec<(HeaderName, String)>,
}

impl<T: Serialize> Reply<T> {
    /// 200 with `data`.
    pub fn ok(data: T) -> Self {
        Self {
            status: StatusCode::OK,
            data,
            headers: Vec::new(),
        }
    }

    /// 201 with `data` and the new resource's `Location`.
    pub fn created(data: T, location: String) -> Self {
        Self {
            status: StatusCode::CREATED,
            data,
            headers: vec![(header::LOCATION, location)],
        }
    }

    /// 202 with `data`: taken in, nothing more to say.
    pub fn accepted(data: T) -> Self {
        Self {
            status: StatusCode::ACCEPTED,
            data,
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    pub(crate) fn into_response(self) -> Result<Response, ApiError> {
        #[derive(Serialize)]
        struct Envelope<T> {
            data: T,
        }
        let body = serde_json::to_string(&Envelope { data: self.data }).map_err(|e| {
            tracing::error!(error = %e, "serialising a response failed");
            ApiError::Internal
        })?;
        let mut res = json_response(self.status, body);
        // Every answer is one account's data, and some carry secrets (a project's
        // `apiKeyPrivate`, a webhook's signing secret): no cache, shared or private, keeps one.
        set_header(&mut res, header::CACHE_CONTROL, "no-store");
        for (name, value) in self.headers {
            set_header(&mut res, name, &value);
        }
        Ok(res)
    }
}
