//! The adapter's error: SQLite's, the pool's and the store's own in one type, so that `?` works
//! on all three; it leaves the adapter as the [`StoreError`] it carries.

use vigil_core::store::{Cause, OpFailed, StoreError};

/// A failure inside this adapter (see the module's summary).
#[derive(Debug)]
pub struct Db(pub(crate) StoreError);

pub(crate) type DbResult<T> = Result<T, Db>;

impl std::fmt::Display for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", vigil_core::report::Chain(&self.0))
    }
}

impl From<StoreError> for Db {
    fn from(e: StoreError) -> Self {
        Db(e)
    }
}

impl From<rusqlite::Error> for Db {
    fn from(e: rusqlite::Error) -> Self {
        Db(StoreError::Backend(Box::new(e)))
    }
}

impl From<r2d2::Error> for Db {
    fn from(e: r2d2::Error) -> Self {
        Db(StoreError::Backend(OpFailed::cause("sqlite pool", e)))
    }
}

impl From<Db> for StoreError {
    fn from(e: Db) -> Self {
        e.0
    }
}

impl From<String> for Db {
    fn from(e: String) -> Self {
        Db(StoreError::Backend(OpFailed::cause("sqlite write", e)))
    }
}

/// An error of the writer's own transaction, for each write it carried.
pub(crate) fn failed(op: &'static str, e: &rusqlite::Error) -> Db {
    Db(StoreError::Backend(OpFailed::cause(op, e.to_string())))
}

/// A backend failure of `op` (opening the file, starting a thread).
pub(crate) fn backend(op: &'static str, e: impl Into<Cause>) -> Db {
    Db(StoreError::Backend(OpFailed::cause(op, e)))
}

/// Something stored that cannot be read as what it should be.
pub(crate) fn corrupt(e: impl Into<Cause>) -> Db {
    Db(StoreError::Corrupt(e.into()))
}
