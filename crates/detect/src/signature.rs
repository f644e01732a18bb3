//! Web Bot Auth: a request signed under HTTP Message Signatures (RFC 9421) with
//! `tag="web-bot-auth"`, its key named by JWK thumbprint in a key directory that its
//! `Signature-Agent` header points to. Parsing and the cryptography are Cloudflare's
//! `web-bot-auth` crate; this module only shows it the evidence as a message, and checks what
//! the crate leaves to its caller: the time window, and the directory's own signature.
//!
//! Pure: no fetch and no clock. The service fetches directories and remembers signatures it has
//! seen (replays); the engine is told the outcome ([`SignatureCheck`]).

use sfv::SerializeValue as _;
use sha2::{Digest, Sha256};
use web_bot_auth::components::{
    CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters,
};
use web_bot_auth::keyring::{JSONWebKeySet, KeyRing};
use web_bot_auth::message_signatures::{MessageVerifier, SignedMessage};
use web_bot_auth::{SignatureAgentLink, WebBotAuthVerifier};

use crate::evidence::{Evidence, Headers};
// The request line lives with the evidence that carries it; this path still names it.
use crate::evidence::RequestLine;

/// How far a signer's clock may be from ours, either way.
pub const SKEW_SECS: i64 = 60;
/// The longest validity a signature may claim (`expires - created`): the drafts recommend
/// minutes; a day is generous and bounds how long a replay must be remembered.
pub const MAX_VALIDITY_SECS: i64 = 24 * 3600;
/// The well-known path of a key directory under its origin.
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
/// The tag of a directory response's own signature.
pub const DIRECTORY_TAG: &str = "http-message-signatures-directory";
/// The largest key directory read.
pub const MAX_DIRECTORY_BYTES: usize = 64 * 1024;
/// The most keys kept of one directory: agents publish one or two (a rotation's overlap); a
/// directory of thousands would make every copy of it, in memory and in the store, that large.
pub const MAX_DIRECTORY_KEYS: usize = 8;

/// The evidence as an RFC 9421 message: its headers, and its request line's derived components.
struct Message<'a> {
    headers: &'a Headers,
    request: Option<&'a RequestLine>,
}

impl Message<'_> {
    fn derived(&self, d: &DerivedComponent) -> Option<String> {
        let r = self.request?;
        let authority = r.authority.as_deref().map(str::to_ascii_lowercase);
        match d {
            DerivedComponent::Authority { .. } => authority,
            DerivedComponent::Method { .. } => r.method.clone(),
            DerivedComponent::Path { .. } | DerivedComponent::RequestTarget { .. } => {
                r.path.clone()
            }
            DerivedComponent::Scheme { .. } => Some("https".to_owned()),
            DerivedComponent::TargetUri { .. } => {
                Some(format!("https://{}{}", authority?, r.path.as_deref()?))
            }
            _ => None,
        }
    }
}

/// A header's value as a covered component: whole, or one member of a dictionary (`;key=`).
fn field(headers: &Headers, f: &HTTPField) -> Vec<String> {
    let Some(value) = headers.get(&f.name) else {
        return Vec::new();
    };
    let key = f.parameters.0.iter().find_map(|p| match p {
        HTTPFieldParameters::Key(k) => Some(k.as_str()),
        _ => None,
    });
    let Some(key) = key else {
        return vec![value.to_owned()];
    };
    let member = sfv::Parser::new(value)
        .parse_dictionary()
        .ok()
        .and_then(|d| {
            d.into_iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| v)
        });
    match member {
        Some(sfv::ListEntry::Item(item)) => vec![item.serialize_value()],
        _ => Vec::new(),
    }
}

impl SignedMessage for Message<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(f) => field(self.headers, f),
            CoveredComponent::Derived(d) => self.derived(d).into_iter().collect(),
        }
    }
}

/// A Web Bot Auth signature read from a request, not yet verified.
pub struct Signed {
    verifier: WebBotAuthVerifier,
    /// The key directories its `Signature-Agent` names (https or http URLs), in order.
    pub directories: Vec<String>,
    /// Keys carried inline in a `data:` Signature-Agent: self-asserted, so never `verified`.
    pub inline: bool,
    pub keyid: Option<String>,
    pub created: Option<i64>,
    pub expires: Option<i64>,
    /// What makes this signature one: its nonce, else its signature bytes (hex of SHA-256).
    pub replay_key: String,
}

/// Why a signature does not verify, in words for a reason's detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Whether the evidence carries a signature at all: a `Signature-Input` header.
pub fn is_signed(e: &Evidence) -> bool {
    e.headers
        .as_ref()
        .is_some_and(|h| h.get("signature-input").is_some() && h.get("signature").is_some())
}

/// Reads the evidence's Web Bot Auth signature. None when the evidence carries none; a refusal
/// when it carries one that is not a well-formed Web Bot Auth signature (another tag, a missing
/// `keyid`, `created` or `expires`, a component the evidence lacks, `Signature-Agent` present but
/// not covered).
pub fn read(e: &Evidence) -> Option<Result<Signed, Refusal>> {
    if !is_signed(e) {
        return None;
    }
    let headers = e.headers.as_ref()?;
    let message = Message {
        headers,
        request: e.request.as_ref(),
    };
    Some(
        WebBotAuthVerifier::parse(&message)
            .map_err(|err| {
                Refusal(format!(
                    "is not a valid Web Bot Auth signature ({})",
                    short(&err)
                ))
            })
            .map(|verifier| {
                let details = &verifier.get_parsed_label().base.parameters.details;
                let (keyid, created, expires) =
                    (details.keyid.clone(), details.created, details.expires);
                let replay_key = match &details.nonce {
                    Some(n) => format!("n:{}", hex(Sha256::digest(n.as_bytes()).as_slice())),
                    None => format!(
                        "s:{}",
                        hex(Sha256::digest(&verifier.get_parsed_label().signature).as_slice())
                    ),
                };
                let mut directories = Vec::new();
                let mut inline = false;
                for link in verifier.get_signature_agents() {
                    match link {
                        SignatureAgentLink::External(url) => directories.push(url.clone()),
                        SignatureAgentLink::Inline(_) => inline = true,
                    }
                }
                Signed {
                    verifier,
                    directories,
                    inline,
                    keyid,
                    created,
                    expires,
                    replay_key,
                }
            }),
    )
}

impl Signed {
    /// The time window at `now` (Unix seconds), with [`SKEW_SECS`] either way.
    pub fn check_time(&self, now: i64) -> Result<(), Refusal> {
        let (Some(created), Some(expires)) = (self.created, self.expires) else {
            return Err(Refusal("has no created or expires".into()));
        };
        if created > now + SKEW_SECS {
            return Err(Refusal(format!(
                "was created {}s in the future",
                created - now
            )));
        }
        if expires + SKEW_SECS < now {
            return Err(Refusal(format!("expired {}s ago", now - expires)));
        }
        if expires < created || expires - created > MAX_VALIDITY_SECS {
            return Err(Refusal("claims a validity over 24 hours".into()));
        }
        Ok(())
    }

    /// Verifies the signature against `keys` (the time window is [`Signed::check_time`]'s).
    pub fn verify(self, keys: &Keys) -> Result<(), Refusal> {
        self.verifier
            .verify(&keys.ring, None)
            .map(|_| ())
            .map_err(|e| Refusal(format!("does not verify ({})", short(&e))))
    }
}

/// The keys of one directory, as the engine verifies with them.
#[derive(Clone, Default)]
pub struct Keys {
    ring: KeyRing,
    /// The thumbprints of the Ed25519 keys imported.
    pub thumbprints: Vec<String>,
    /// The imported keys alone as a JWKS document: what is worth keeping of the directory (its
    /// other members and keys of other types are dropped).
    pub jwks: String,
}

impl Keys {
    /// The Ed25519 keys of a JWKS document, at most [`MAX_DIRECTORY_KEYS`] of them (others are
    /// skipped: the drafts sign with Ed25519).
    pub fn from_jwks(json: &[u8]) -> Result<Self, Refusal> {
        let set: JSONWebKeySet = serde_json::from_slice(json)
            .map_err(|e| Refusal(format!("is not a JWKS document ({e})")))?;
        let mut keys = Keys::default();
        let mut kept = Vec::new();
        for key in set.keys {
            if kept.len() == MAX_DIRECTORY_KEYS {
                break;
            }
            if keys.ring.try_import_jwk(&key).is_ok() {
                keys.thumbprints.push(key.b64_thumbprint());
                kept.push(key);
            }
        }
        if keys.thumbprints.is_empty() {
            return Err(Refusal("has no Ed25519 key".into()));
        }
        keys.jwks = serde_json::to_string(&JSONWebKeySet { keys: kept })
            .map_err(|e| Refusal(format!("keys cannot be written back ({e})")))?;
        Ok(keys)
    }
}

/// A key directory's response, as fetched: the body and the headers that sign it.
pub struct DirectoryResponse<'a> {
    /// The directory's authority (`host[:port]`), which its signature covers as `@authority;req`.
    pub authority: &'a str,
    pub headers: &'a Headers,
    pub body: &'a [u8],
}

struct DirectoryMessage<'a>(&'a DirectoryResponse<'a>);

impl SignedMessage for DirectoryMessage<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(f) => field(self.0.headers, f),
            CoveredComponent::Derived(DerivedComponent::Authority { .. }) => {
                vec![self.0.authority.to_ascii_lowercase()]
            }
            _ => Vec::new(),
        }
    }
}

/// The keys of a directory whose response is signed by one of its own keys, with
/// `tag="http-message-signatures-directory"`, within its time window at `now`.
pub fn directory_keys(r: &DirectoryResponse<'_>, now: i64) -> Result<Keys, Refusal> {
    if r.body.len() > MAX_DIRECTORY_BYTES {
        return Err(Refusal("is larger than 64 KiB".into()));
    }
    let keys = Keys::from_jwks(r.body)?;
    let verifier = MessageVerifier::parse(&DirectoryMessage(r), |(_, list)| {
        list.params
            .get("tag")
            .and_then(|t| t.as_string())
            .is_some_and(|t| t.as_str() == DIRECTORY_TAG)
    })
    .map_err(|e| Refusal(format!("is not signed as a directory ({})", short(&e))))?;
    let d = &verifier.parsed.base.parameters.details;
    if let Some(created) = d.created
        && created > now + SKEW_SECS
    {
        return Err(Refusal("was signed in the future".into()));
    }
    if let Some(expires) = d.expires
        && expires + SKEW_SECS < now
    {
        return Err(Refusal("has an expired signature".into()));
    }
    verifier
        .verify(&keys.ring, None)
        .map_err(|e| Refusal(format!("is not signed by its own keys ({})", short(&e))))?;
    Ok(keys)
}

/// The outcome of checking a request's signature, as the service found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureCheck {
    /// The directory (its `Signature-Agent` URL) the keys came from, or were to come from.
    pub directory: Option<String>,
    pub keyid: Option<String>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Verified with a key of the directory, within its time window, seen for the first time.
    Verified,
    /// Verified with keys the request carried itself (a `data:` Signature-Agent): no one vouches.
    SelfSigned,
    /// Malformed, outside its window, not verifying, under an unknown key, or replayed.
    Invalid(String),
    /// The directory could not be fetched or is not a signed directory: nothing is known.
    Unverifiable(String),
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The crate's error in a few words (its parse errors can quote the whole header).
fn short(e: &web_bot_auth::ImplementationError) -> String {
    use web_bot_auth::ImplementationError as E;
    match e {
        E::ParsingError(_) => "unparsable or missing parameters".into(),
        E::LookupError(c) => format!("a covered component is missing: {}", component_name(c)),
        E::NoSuchKey => "no key of the directory has its keyid".into(),
        E::FailedToVerify(_) => "the signature is not the key's".into(),
        E::UnsupportedAlgorithm(_) => "unsupported algorithm".into(),
        E::InvalidKeyLength | E::InvalidSignatureLength => {
            "a key or signature of the wrong size".into()
        }
        E::NonAsciiContentFound => "non-ASCII content".into(),
        _ => "malformed".into(),
    }
}

fn component_name(c: &CoveredComponent) -> String {
    match c {
        CoveredComponent::HTTP(f) => f.name.clone(),
        CoveredComponent::Derived(d) => match d {
            DerivedComponent::Authority { .. } => "@authority".into(),
            DerivedComponent::Method { .. } => "@method".into(),
            DerivedComponent::Path { .. } => "@path".into(),
            DerivedComponent::TargetUri { .. } => "@target-uri".into(),
            _ => "a derived component".into(),
        },
    }
}

/// Signing, as an agent does it: for tests, the README's worked example (`vigil agents sign`) and
/// the local directory server (`vigil agents directory`). Ed25519 keys, by JWK thumbprint.
pub mod sign {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use indexmap::IndexMap;
    use web_bot_auth::components::{
        CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters, HTTPFieldParametersSet,
    };
    use web_bot_auth::keyring::{Algorithm, Thumbprintable};
    use web_bot_auth::message_signatures::{MessageSigner, UnsignedMessage};

    use super::DIRECTORY_TAG;
    use crate::evidence::RequestLine;

    /// An agent's signing key.
    pub struct Key {
        secret: [u8; 32],
    }

    /// How a request names its directory in `Signature-Agent`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum AgentForm {
        /// The current drafts: a dictionary, `agent1="https://..."`, covered with `;key="agent1"`.
        Dictionary,
        /// The older drafts: a plain string, `"https://..."`.
        Plain,
    }

    impl Key {
        pub fn from_secret(secret: [u8; 32]) -> Self {
            Self { secret }
        }

        /// The public key as a JWK (`{"kty":"OKP","crv":"Ed25519","x":...}`).
        pub fn jwk(&self) -> serde_json::Value {
            let public = ed25519_dalek::SigningKey::from_bytes(&self.secret).verifying_key();
            serde_json::json!({"kty": "OKP", "crv": "Ed25519",
                               "x": URL_SAFE_NO_PAD.encode(public.as_bytes())})
        }

        /// The key's id: its JWK thumbprint (RFC 7638), base64url.
        pub fn thumbprint(&self) -> String {
            let public = ed25519_dalek::SigningKey::from_bytes(&self.secret).verifying_key();
            Thumbprintable::OKP {
                crv: "Ed25519".into(),
                x: URL_SAFE_NO_PAD.encode(public.as_bytes()),
            }
            .b64_thumbprint()
        }

        /// A JWKS document with this key.
        pub fn jwks(&self) -> String {
            serde_json::json!({"keys": [self.jwk()]}).to_string()
        }

        fn sign(
            &self,
            components: IndexMap<CoveredComponent, String>,
            tag: &str,
            nonce: &str,
            validity: std::time::Duration,
        ) -> Result<(String, String), String> {
            let mut m = Unsigned {
                components,
                input: String::new(),
                signature: String::new(),
            };
            MessageSigner {
                keyid: self.thumbprint(),
                nonce: nonce.to_owned(),
                tag: tag.to_owned(),
            }
            .generate_signature_headers_content(&mut m, validity, Algorithm::Ed25519, &self.secret)
            .map_err(|e| e.to_string())?;
            Ok((m.input, m.signature))
        }

        /// The headers that sign `request` (`@authority`, `@method`, `@path` and
        /// `signature-agent`), valid from now for `validity`: `signature-agent`,
        /// `signature-input`, `signature`.
        pub fn sign_request(
            &self,
            request: &RequestLine,
            agent: &str,
            form: AgentForm,
            nonce: &str,
            validity: std::time::Duration,
        ) -> Result<Vec<(String, String)>, String> {
            let quoted = format!("\"{agent}\"");
            let (header, params) = match form {
                AgentForm::Dictionary => (
                    format!("agent1={quoted}"),
                    vec![HTTPFieldParameters::Key("agent1".into())],
                ),
                AgentForm::Plain => (quoted.clone(), vec![]),
            };
            let mut c = IndexMap::new();
            let authority = request.authority.clone().ok_or("no authority")?;
            c.insert(
                CoveredComponent::Derived(DerivedComponent::Authority { req: false }),
                authority.to_ascii_lowercase(),
            );
            if let Some(m) = &request.method {
                c.insert(
                    CoveredComponent::Derived(DerivedComponent::Method { req: false }),
                    m.clone(),
                );
            }
            if let Some(p) = &request.path {
                c.insert(
                    CoveredComponent::Derived(DerivedComponent::Path { req: false }),
                    p.clone(),
                );
            }
            c.insert(
                CoveredComponent::HTTP(HTTPField {
                    name: "signature-agent".into(),
                    parameters: HTTPFieldParametersSet(params),
                }),
                quoted,
            );
            let (input, signature) = self.sign(c, "web-bot-auth", nonce, validity)?;
            Ok(vec![
                ("signature-agent".into(), header),
                ("signature-input".into(), format!("sig1={input}")),
                ("signature".into(), format!("sig1={signature}")),
            ])
        }

        /// The headers that sign a directory response served at `authority`.
        pub fn sign_directory(&self, authority: &str) -> Result<Vec<(String, String)>, String> {
            let mut c = IndexMap::new();
            c.insert(
                CoveredComponent::Derived(DerivedComponent::Authority { req: true }),
                authority.to_ascii_lowercase(),
            );
            let (input, signature) = self.sign(
                c,
                DIRECTORY_TAG,
                "directory",
                std::time::Duration::from_secs(300),
            )?;
            Ok(vec![
                ("signature-input".into(), format!("sig1={input}")),
                ("signature".into(), format!("sig1={signature}")),
            ])
        }
    }

    struct Unsigned {
        components: IndexMap<CoveredComponent, String>,
        input: String,
        signature: String,
    }

    impl UnsignedMessage for Unsigned {
        fn fetch_components_to_cover(&self) -> IndexMap<CoveredComponent, String> {
            self.components.clone()
        }

        fn register_header_contents(&mut self, input: String, signature: String) {
            self.input = input;
            self.signature = signature;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::sign::{AgentForm, Key};
    use super::*;

    /// RFC 9421's Ed25519 test key (appendix B.1.4), as the Web Bot Auth drafts' examples use it.
    const RFC_JWKS: &str = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}"#;

    fn evidence(headers: Vec<(String, String)>, request: RequestLine) -> Evidence {
        Evidence {
            headers: Some(Headers::from_pairs(headers)),
            request: Some(request),
            ..Evidence::default()
        }
    }

    fn request() -> RequestLine {
        RequestLine {
            method: Some("GET".into()),
            authority: Some("shop.example".into()),
            path: Some("/checkout".into()),
        }
    }

    fn key(n: u8) -> Key {
        Key::from_secret([n; 32])
    }

    fn signed(k: &Key, form: AgentForm) -> Vec<(String, String)> {
        k.sign_request(
            &request(),
            "https://agent.example",
            form,
            "nonce-1",
            Duration::from_secs(60),
        )
        .unwrap()
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    #[test]
    fn the_drafts_test_vector_verifies_within_its_window_only() {
        let e = evidence(
            vec![
                ("Signature".into(), "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:".into()),
                ("Signature-Input".into(), r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="gubxywVx7hzbYKatLgzuKDllDAIXAkz41PydU7aOY7vT+Mb3GJNxW0qD4zJ+IOQ1NVtg+BNbTCRUMt1Ojr5BgA==";tag="web-bot-auth""#.into()),
            ],
            RequestLine { authority: Some("example.com".into()), ..RequestLine::default() },
        );
        let keys = Keys::from_jwks(RFC_JWKS.as_bytes()).unwrap();
        assert_eq!(
            keys.thumbprints,
            ["poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"]
        );
        let s = read(&e).unwrap().unwrap();
        assert!(s.directories.is_empty() && !s.inline);
        assert_eq!(s.check_time(1_735_690_000), Ok(()));
        assert!(
            s.check_time(1_735_693_200 + SKEW_SECS + 1).is_err(),
            "expired"
        );
        assert!(
            s.check_time(1_735_689_600 - SKEW_SECS - 1).is_err(),
            "not yet valid"
        );
        assert_eq!(s.verify(&keys), Ok(()));
        // The same signature for another authority does not verify.
        let mut other = e.clone();
        other.request = Some(RequestLine {
            authority: Some("example.org".into()),
            ..RequestLine::default()
        });
        assert!(read(&other).unwrap().unwrap().verify(&keys).is_err());
    }

    #[test]
    fn a_generated_key_verifies_in_both_agent_forms() {
        let k = key(7);
        let keys = Keys::from_jwks(k.jwks().as_bytes()).unwrap();
        for form in [AgentForm::Dictionary, AgentForm::Plain] {
            let s = read(&evidence(signed(&k, form), request()))
                .unwrap()
                .unwrap();
            assert_eq!(s.directories, ["https://agent.example"], "{form:?}");
            assert_eq!(s.keyid.as_deref(), Some(k.thumbprint().as_str()));
            assert_eq!(s.check_time(now()), Ok(()));
            assert_eq!(s.verify(&keys), Ok(()), "{form:?}");
        }
    }

    #[test]
    fn tampering_an_unknown_key_a_wrong_tag_and_the_window_are_refused() {
        let k = key(7);
        let keys = Keys::from_jwks(k.jwks().as_bytes()).unwrap();
        let headers = signed(&k, AgentForm::Dictionary);
        for tampered in [
            RequestLine {
                authority: Some("other.example".into()),
                ..request()
            },
            RequestLine {
                path: Some("/admin".into()),
                ..request()
            },
            RequestLine {
                method: Some("POST".into()),
                ..request()
            },
        ] {
            let s = read(&evidence(headers.clone(), tampered.clone()))
                .unwrap()
                .unwrap();
            assert!(s.verify(&keys).is_err(), "{tampered:?}");
        }
        // A covered component the evidence lacks.
        let lacking = RequestLine {
            path: None,
            ..request()
        };
        assert!(read(&evidence(headers.clone(), lacking)).unwrap().is_err());
        // Another directory's key.
        let s = read(&evidence(headers.clone(), request()))
            .unwrap()
            .unwrap();
        let other = Keys::from_jwks(key(8).jwks().as_bytes()).unwrap();
        assert!(s.verify(&other).unwrap_err().0.contains("no key"));
        // The Signature-Agent header changed after signing.
        let mut swapped = headers.clone();
        swapped[0].1 = "agent1=\"https://evil.example\"".into();
        let s = read(&evidence(swapped, request())).unwrap().unwrap();
        assert!(s.verify(&keys).is_err());
        // Another tag is not a Web Bot Auth signature.
        let mut tagged = headers.clone();
        tagged[1].1 = tagged[1].1.replace("web-bot-auth", "other-protocol");
        assert!(read(&evidence(tagged, request())).unwrap().is_err());
        // The window: created in the future, expired.
        let s = read(&evidence(headers, request())).unwrap().unwrap();
        assert!(
            s.check_time(now() - 3_600)
                .unwrap_err()
                .0
                .contains("future")
        );
        assert!(
            s.check_time(now() + 3_600)
                .unwrap_err()
                .0
                .contains("expired")
        );
        // Unsigned evidence has no signature to read.
        assert!(read(&Evidence::default()).is_none());
    }

    #[test]
    fn replays_share_a_key_and_other_signatures_do_not() {
        let k = key(7);
        let a = read(&evidence(signed(&k, AgentForm::Plain), request()))
            .unwrap()
            .unwrap();
        let b = read(&evidence(signed(&k, AgentForm::Plain), request()))
            .unwrap()
            .unwrap();
        assert_eq!(a.replay_key, b.replay_key, "same nonce");
        let other = k
            .sign_request(
                &request(),
                "https://agent.example",
                AgentForm::Plain,
                "nonce-2",
                Duration::from_secs(60),
            )
            .unwrap();
        let c = read(&evidence(other, request())).unwrap().unwrap();
        assert_ne!(a.replay_key, c.replay_key);
    }

    #[test]
    fn a_directory_must_be_signed_by_its_own_key_for_its_authority() {
        let k = key(9);
        let jwks = k.jwks();
        let h = Headers::from_pairs(k.sign_directory("agent.example").unwrap());
        let r = |authority, headers| DirectoryResponse {
            authority,
            headers,
            body: jwks.as_bytes(),
        };
        let keys = directory_keys(&r("agent.example", &h), now()).unwrap();
        assert_eq!(keys.thumbprints, [k.thumbprint()]);
        assert!(
            directory_keys(&r("other.example", &h), now()).is_err(),
            "another authority"
        );
        let none = Headers::default();
        assert!(
            directory_keys(&r("agent.example", &none), now()).is_err(),
            "unsigned"
        );
        let by_other = Headers::from_pairs(key(10).sign_directory("agent.example").unwrap());
        assert!(
            directory_keys(&r("agent.example", &by_other), now()).is_err(),
            "another's key"
        );
        assert!(
            directory_keys(&r("agent.example", &h), now() + 3_600).is_err(),
            "expired"
        );
        assert!(Keys::from_jwks(b"{}").is_err() && Keys::from_jwks(b"not json").is_err());
    }

    #[test]
    fn a_directory_s_keys_are_bounded_and_kept_alone() {
        let many: Vec<serde_json::Value> = (0..20u8).map(|i| key(i).jwk()).collect();
        let mut doc = serde_json::json!({"keys": many, "padding": "x".repeat(1000)});
        doc["keys"][0]["comment"] = "extra member".into();
        let keys = Keys::from_jwks(doc.to_string().as_bytes()).unwrap();
        assert_eq!(keys.thumbprints.len(), MAX_DIRECTORY_KEYS);
        assert!(
            keys.jwks.len() < 1000,
            "only the keys are kept: {}",
            keys.jwks
        );
        let again = Keys::from_jwks(keys.jwks.as_bytes()).unwrap();
        assert_eq!(again.thumbprints, keys.thumbprints);
    }
}
