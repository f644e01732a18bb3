//! The pipeline's request and answer: plain `http` types, so that the pipeline is one service
//! that both doors wrap. `vigil serve` reads hyper's request into a [`Request`]
//! (`server.rs`); the Lambda functions convert API Gateway's (the root crate's `gateway.rs`).
//! Neither door's own types reach past this module's edge.
//!
//! What a door must hand over: the method, the URI as the client sent it (its query is parsed
//! by [`crate::extract::Query`]), the headers, the body read whole, and the route's path ids as
//! [`PathParams`] (API Gateway matched them; the local router did). What the door knows of the
//! caller is the separate [`crate::Context`].

use bytes::Bytes;

/// A request as the pipeline reads it: its body already read whole.
pub type Request = http::Request<Bytes>;

/// An answer: every body the pipeline writes is UTF-8 text (JSON, HTML, JavaScript, YAML) or
/// empty.
pub type Response = http::Response<Bytes>;

/// The path ids the door matched for the route (`projectId`, `sessionId`, ...), each value
/// its segment percent-decoded. Read by [`crate::extract::FromPath`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathParams(Vec<(String, String)>);

impl PathParams {
    /// The value of path id `name`, if the route has one.
    pub fn get(&self, name: &str) -> Option<&str> {
        first(&self.0, name)
    }
}

/// The first value named `name` among `pairs` (path ids and query parameters alike).
pub(crate) fn first<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for PathParams {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// A request with `body`, no headers and the path ids `params`, as the extractors' tests build.
#[cfg(test)]
pub(crate) fn request(body: impl Into<Bytes>, params: PathParams) -> Request {
    let mut req = Request::new(body.into());
    req.extensions_mut().insert(params);
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_params_are_found_by_name() {
        let p: PathParams = [("projectId", "prj_1"), ("sessionId", "s 1")]
            .into_iter()
            .collect();
        assert_eq!(p.get("sessionId"), Some("s 1"));
        assert_eq!(p.get("webhookId"), None);
    }
}
