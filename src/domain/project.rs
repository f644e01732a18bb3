//! What a new or changed project may hold: its name and its site's domain, validated at the edge.

use std::fmt;

/// Longest project name.
pub const MAX_NAME_CHARS: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectFieldError {
    #[error("must be 1 to {MAX_NAME_CHARS} characters without control characters")]
    Name,
    #[error("must be a host name such as shop.example (letters, digits, hyphens and dots)")]
    Domain,
}

/// A project's display name: 1 to 100 characters, no control characters, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectName(String);

impl ProjectName {
    pub fn parse(s: &str) -> Result<Self, ProjectFieldError> {
        let s = s.trim();
        let n = s.chars().count();
        if n == 0 || n > MAX_NAME_CHARS || s.chars().any(char::is_control) {
            return Err(ProjectFieldError::Name);
        }
        Ok(Self(s.to_owned()))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The host name of the site a project protects (its pages' origin, for the browser agent), in
/// lowercase: dot-separated labels of letters, digits and inner hyphens, at most 253 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain(String);

impl Domain {
    pub fn parse(s: &str) -> Result<Self, ProjectFieldError> {
        let s = s.to_ascii_lowercase();
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if s.is_empty() || s.len() > 253 || !s.split('.').all(label_ok) {
            return Err(ProjectFieldError::Domain);
        }
        Ok(Self(s))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(ProjectName::parse("  Shop ").unwrap().into_string(), "Shop");
        assert!(ProjectName::parse(&"x".repeat(100)).is_ok());
        for bad in ["", "   ", "a\nb", &"x".repeat(101)] {
            assert_eq!(
                ProjectName::parse(bad),
                Err(ProjectFieldError::Name),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn domains() {
        assert_eq!(
            Domain::parse("Shop.Example").unwrap().to_string(),
            "shop.example"
        );
        assert!(Domain::parse("localhost").is_ok());
        assert!(Domain::parse("a-b.c1.example").is_ok());
        for bad in [
            "",
            "https://shop.example",
            "shop.example/",
            "shop..example",
            "-a.example",
            "a-.example",
            "shop.example:443",
            "shöp.example",
            ".example",
            "a b",
        ] {
            assert_eq!(
                Domain::parse(bad),
                Err(ProjectFieldError::Domain),
                "{bad:?}"
            );
        }
        assert!(Domain::parse(&format!("{}.example", "a".repeat(64))).is_err());
    }

    proptest::proptest! {
        #[test]
        fn names_and_domains_are_accepted_or_refused_and_round_trip(s in ".{0,300}") {
            if let Ok(n) = ProjectName::parse(&s) {
                let text = n.clone().into_string();
                proptest::prop_assert_eq!(ProjectName::parse(&text), Ok(n));
            }
            if let Ok(d) = Domain::parse(&s) {
                proptest::prop_assert_eq!(Domain::parse(&d.to_string()), Ok(d));
            }
        }
    }
}
