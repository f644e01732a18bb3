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
    #[error(
        "must be a registrable domain or a subdomain of one, not a public suffix such as com or co.uk"
    )]
    PublicSuffix,
    #[error("must be a host name, not an IP address")]
    IpLiteral,
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
/// lowercase: dot-separated labels of letters, digits and inner hyphens, at most 253 characters;
/// a registrable domain (by the public suffix list) or a subdomain of one, so that no project can
/// claim every site under `com` or `github.io`; never an IP literal. `localhost` is the one
/// exception: a local project for trying the agent (`vigil serve`'s demo).
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
        if s == "localhost" {
            return Ok(Self(s));
        }
        // Dotted digits are an address to every browser, whatever their count.
        if s.split('.').all(|l| l.bytes().all(|b| b.is_ascii_digit())) {
            return Err(ProjectFieldError::IpLiteral);
        }
        if psl::domain(s.as_bytes()).is_none() {
            return Err(ProjectFieldError::PublicSuffix);
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
pub fn origin_allowed(domain: &str, origin: &Origin) -> bool {
    let url = &origin.0;
    let Some(host) = url.host() else {
        return false;
    };
    if domain == "localhost" {
        let loopback = match host {
            url::Host::Domain(d) => d == "localhost" || d.ends_with(".localhost"),
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        };
        return loopback;
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

/// Whether a request's authority (`host[:port]`, as a `Host` header carries it) names the project's
/// site: `domain` or one of its subdomains, or for a `localhost` project a loopback host. A Web Bot
/// Auth signature sent to the collect route must have been made for this site: one an agent made
/// for another site proves nothing here, whatever `Host` the replay carries.
pub fn authority_allowed(domain: &str, authority: &str) -> bool {
    let Ok(url) = url::Url::parse(&format!("https://{authority}/")) else {
        return false;
    };
    let bare = url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    bare && origin_allowed(domain, &Origin(url))
}

/// A page's origin as browsers send it: `http` or `https`, a host and maybe a port, in exactly
/// its canonical serialisation (lowercase, no default port, no path, no percent-encoding). Anything
/// else (`null`, `HTTPS://Shop.Example`, `https://example%2Ecom`) is not an origin any browser
/// sends, so it is refused rather than normalised and echoed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(url::Url);

impl Origin {
    pub fn parse(s: &str) -> Option<Self> {
        if s.len() > 300 {
            return None;
        }
        let url = url::Url::parse(s).ok()?;
        let canonical = url.origin().ascii_serialization();
        (matches!(url.scheme(), "http" | "https") && canonical == s).then_some(Self(url))
    }

    /// The canonical serialisation, as received and as echoed in `Access-Control-Allow-Origin`.
    pub fn as_str(&self) -> &str {
        self.0.as_str().trim_end_matches('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 52: entries outside openapi.yaml's pattern (non-ASCII letters, a leading space) were
    /// stored and answered back.
    #[test]
    fn agent_policies_hold_to_the_schemas_pattern() {
        let p = AgentPolicy::parse(vec![
            "ai_agent".into(),
            "Google".into(),
            "Common Crawl".into(),
        ])
        .unwrap();
        assert_eq!(p.allow, ["ai_agent", "Google", "Common Crawl"]);
        for bad in ["Gööglé", " Google", "", "x/y", "エージェント"] {
            assert!(AgentPolicy::parse(vec![bad.into()]).is_err(), "{bad:?}");
        }
        assert!(AgentPolicy::parse(vec!["a".repeat(65)]).is_err());
    }

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
    fn authorities() {
        for ok in ["shop.example", "SHOP.example:8443", "www.shop.example"] {
            assert!(authority_allowed("shop.example", ok), "{ok}");
        }
        for bad in [
            "other.example",
            "evilshop.example",
            "shop.example.evil",
            "user@shop.example",
            "shop.example/path",
            "shop.example?q",
            "203.0.113.7",
            "",
            "[::1]",
        ] {
            assert!(!authority_allowed("shop.example", bad), "{bad}");
        }
        for ok in ["localhost:8080", "127.0.0.1:9", "[::1]:1"] {
            assert!(authority_allowed("localhost", ok), "{ok}");
        }
        assert!(!authority_allowed("localhost", "shop.example"));
    }

    #[test]
    fn origins() {
        for ok in [
            "https://shop.example",
            "https://www.shop.example",
            "https://a.b.shop.example:8443",
        ] {
            let o = Origin::parse(ok).unwrap_or_else(|| panic!("{ok}"));
            assert_eq!(o.as_str(), ok);
            assert!(origin_allowed("shop.example", &o), "{ok}");
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
            "https://shop.example.",
        ] {
            assert!(
                Origin::parse(bad).is_none_or(|o| !origin_allowed("shop.example", &o)),
                "{bad}"
            );
        }
        // Only the canonical serialisation is an origin: nothing is normalised and echoed.
        for odd in [
            "HTTPS://Shop.Example",
            "https://shop.example/",
            "https://shop.example:443",
            "https://example%2Ecom",
            "ftp://shop.example",
        ] {
            assert_eq!(Origin::parse(odd), None, "{odd}");
        }
        for ok in [
            "http://localhost:8080",
            "http://127.0.0.1:9",
            "http://[::1]:1",
        ] {
            assert!(
                origin_allowed("localhost", &Origin::parse(ok).unwrap()),
                "{ok}"
            );
        }
        for bad in ["http://10.0.0.1", "https://shop.example"] {
            assert!(
                !origin_allowed("localhost", &Origin::parse(bad).unwrap()),
                "{bad}"
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
        // Public suffixes, ICANN's and private ones, are no one's site.
        for suffix in ["com", "co.uk", "github.io", "example", "s3.amazonaws.com"] {
            assert_eq!(
                Domain::parse(suffix),
                Err(ProjectFieldError::PublicSuffix),
                "{suffix}"
            );
        }
        for ok in [
            "shop.co.uk",
            "me.github.io",
            "www.shop.example",
            "shop.example",
        ] {
            assert!(Domain::parse(ok).is_ok(), "{ok}");
        }
        for ip in ["127.0.0.1", "203.0.113.7", "10.1", "8"] {
            assert_eq!(Domain::parse(ip), Err(ProjectFieldError::IpLiteral), "{ip}");
        }
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

/// Which verified agents a project lets through: categories (`ai_agent`, `search`, ...) or
/// operators (`OpenAI`, matched without regard to case). An allowed agent's events keep their
/// `scoreBot` as evidence, but count as no bot in statistics and fire no `bot_detect`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentPolicy {
    #[serde(default)]
    pub allow: Vec<String>,
}

/// The most entries an agent policy may list.
pub const MAX_ALLOWED_AGENTS: usize = 32;

impl AgentPolicy {
    /// A policy from a request's list: each entry a known category, or an operator's name of 1 to
    /// 64 ASCII letters, digits, spaces and `. - _`, not starting with a space; duplicates
    /// dropped.
    pub fn parse(entries: Vec<String>) -> Result<Self, String> {
        if entries.len() > MAX_ALLOWED_AGENTS {
            return Err(format!(
                "`agents.allow` lists at most {MAX_ALLOWED_AGENTS} entries"
            ));
        }
        let mut allow: Vec<String> = Vec::new();
        // As openapi.yaml's pattern says: ASCII letters, digits, `.`, `-`, `_` and spaces, not
        // starting with a space (operators' names in the catalogue are ASCII).
        let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_".contains(c);
        for e in entries {
            let ok = (1..=64).contains(&e.len())
                && e.starts_with(allowed)
                && e.chars().all(|c| allowed(c) || c == ' ');
            if !ok {
                return Err(
                    "`agents.allow` entries are categories (ai_agent, ai_crawler, search, monitor, preview, archive, seo, feed, other) or operator names of 1 to 64 ASCII letters, digits, spaces, `.`, `-` and `_`, not starting with a space"
                        .into(),
                );
            }
            if !allow.iter().any(|a| a.eq_ignore_ascii_case(&e)) {
                allow.push(e);
            }
        }
        Ok(Self { allow })
    }

    /// Whether `agent` is verified and of an allowed category or operator.
    pub fn allows(&self, agent: &vigil_detect::Agent) -> bool {
        use vigil_detect::agents::Status;
        agent.status == Status::Verified
            && self.allow.iter().any(|a| {
                agent.category.is_some_and(|c| c.as_str() == a)
                    || agent
                        .operator
                        .as_deref()
                        .is_some_and(|o| o.eq_ignore_ascii_case(a))
            })
    }
}
