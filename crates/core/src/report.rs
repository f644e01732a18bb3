//! Error reports for logs and the command line: an error followed by its causes, each said once.

use std::error::Error;
use std::fmt;

/// Displays `outer: cause: root cause`. Every error type of the crate displays only its own
/// message and leaves its cause to `source()`, so nothing is said twice.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("writing failed")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn each_cause_once() {
        let e = Outer(std::io::Error::other("disk full"));
        assert_eq!(Chain(&e).to_string(), "writing failed: disk full");
    }
}
