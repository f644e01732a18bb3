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

/// Whether a page at `origin` (an `Origin` header: `scheme://host[:port]`) belongs to a project of
/// `domain`: `https://` and the domain or one of its subdomains, on any port. A project whose
/// domain is `localhost` is a local one: it accepts any loopback origin, over http too, so a
/// developer (and `vigil serve`'s demo page) can try the agent without a certificate.
pub fn origin_allowed(domain: &str, origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    if url.path() != "/" || url.query().is_some() || url.username() != "" {
        return false;
    }
    let Some(host) = url.host() else {
        return false;
    };
    if domain == "localhost" {
        let loopback = match host {
            url::Host::Domain(d) => d == "localhost" || d.ends_with(".localhost"),
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        };
        return loopback && matches!(url.scheme(), "http" | "https");
    }
    let url::Host::Domain(name) = host else {
        return false;
    };
    url.scheme() == "https"
        && (name == domain
            || name
                .strip_suffix(domain)
                .is_some_and(|sub| sub.ends_with('.')))
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
    fn origins() {
        for ok in [
            "https://shop.example",
            "https://www.shop.example",
            "https://a.b.shop.example:8443",
            "HTTPS://Shop.Example",
        ] {
            assert!(origin_allowed("shop.example", ok), "{ok}");
        }
        for bad in [
            "http://shop.example",
            "https://evilshop.example",
            "https://shop.example.evil",
            "https://shop.example/path",
            "https://user@shop.example",
            "null",
            "",
            "https://203.0.113.7",
            "http://localhost:8080",
        ] {
            assert!(!origin_allowed("shop.example", bad), "{bad}");
        }
        for ok in [
            "http://localhost:8080",
            "http://127.0.0.1:9",
            "http://[::1]:1",
        ] {
            assert!(origin_allowed("localhost", ok), "{ok}");
        }
        for bad in ["http://10.0.0.1", "https://shop.example", "file://"] {
            assert!(!origin_allowed("localhost", bad), "{bad}");
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
