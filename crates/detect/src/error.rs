//! The engine's one error: its data could not be read or made sense of.

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed data: {0}")]
    Format(String),
}
