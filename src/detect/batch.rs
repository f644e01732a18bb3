//! `vigil evaluate`: scores visits in batch, one answer line per input line, in order.

use std::io::{BufRead, Write};
use std::net::IpAddr;

use serde::Serialize;

use super::{Engine, Evidence};

/// How the input lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// JSON lines: `{"ipAddress", "userAgent", "headers", "signals"}`, all optional.
    Json,
    /// Apache/nginx combined log lines: the client address and the user agent are used.
    Combined,
}

#[derive(Serialize)]
struct Bad<'a> {
    message: &'a str,
}

/// Why a line is not evidence.
fn parse(line: &str, format: Format) -> Result<Evidence, String> {
    match format {
        Format::Json => {
            let de = &mut serde_json::Deserializer::from_str(line);
            serde_path_to_error::deserialize::<_, StrictEvidence>(de)
                .map(|s| s.0)
                .map_err(|e| {
                    let path = e.path().to_string();
                    let inner = e.into_inner();
                    if path == "." {
                        inner.to_string()
                    } else {
                        format!("{path}: {inner}")
                    }
                })
        }
        Format::Combined => combined(line),
    }
}

/// Evidence whose top-level members are exactly the known ones (signals may hold unknown ones).
struct StrictEvidence(Evidence);

impl<'de> serde::Deserialize<'de> for StrictEvidence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Strict {
            ip_address: Option<IpAddr>,
            user_agent: Option<String>,
            headers: Option<super::Headers>,
            signals: Option<super::Signals>,
        }
        let s = Strict::deserialize(d)?;
        Ok(Self(Evidence {
            ip_address: s.ip_address,
            user_agent: s.user_agent,
            headers: s.headers,
            signals: s.signals,
        }))
    }
}

/// `host ident user [time] "request" status bytes "referer" "user agent"`.
fn combined(line: &str) -> Result<Evidence, String> {
    let host = line.split_ascii_whitespace().next().ok_or("empty line")?;
    let ip: IpAddr = host
        .parse()
        .map_err(|_| format!("{:?} is not an IP address", truncate(host, 60)))?;
    let quoted = quoted_fields(line)?;
    if quoted.len() < 3 {
        return Err("not a combined log line (request, referer and user agent in quotes)".into());
    }
    let ua = quoted[quoted.len() - 1].clone();
    Ok(Evidence {
        ip_address: Some(ip),
        user_agent: (ua != "-").then_some(ua),
        headers: None,
        signals: None,
    })
}

/// The double-quoted fields of a log line, with `\"` and `\\` unescaped.
fn quoted_fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut field = String::new();
        loop {
            match chars.next() {
                None => return Err("unterminated quoted field".into()),
                Some('"') => break,
                Some('\\') => match chars.next() {
                    Some(e) => field.push(e),
                    None => return Err("unterminated quoted field".into()),
                },
                Some(ch) => field.push(ch),
            }
        }
        out.push(field);
    }
    Ok(out)
}

fn truncate(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// Lines read, scored and written together; the batch is split between the cores.
const BATCH: usize = 8192;

/// One input line's answer: the verdict, or why the line is bad.
fn answer(engine: &Engine, line: &str, line_no: usize, format: Format, out: &mut Vec<u8>) -> bool {
    let ok = match parse(line, format) {
        Ok(evidence) => serde_json::to_writer(&mut *out, &engine.evaluate(&evidence)).is_ok(),
        Err(why) => {
            let message = format!("line {line_no}: {why}");
            let _ = serde_json::to_writer(&mut *out, &Bad { message: &message });
            false
        }
    };
    out.push(b'\n');
    ok
}

/// Scores every line of `input` onto `output`, in order. Returns how many lines were bad (each
/// answered `{"message": "line N: ..."}` in its place). I/O errors stop the run.
pub fn run(
    engine: &Engine,
    mut input: impl BufRead,
    mut output: impl Write,
    format: Format,
) -> std::io::Result<usize> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let mut bad = 0;
    let mut first_line = 1;
    loop {
        let mut lines = Vec::with_capacity(BATCH);
        for _ in 0..BATCH {
            let mut buf = String::new();
            if input.read_line(&mut buf)? == 0 {
                break;
            }
            let keep = buf.trim_end_matches(['\n', '\r']).len();
            buf.truncate(keep);
            lines.push(buf);
        }
        if lines.is_empty() {
            break;
        }
        let chunk = lines.len().div_ceil(workers);
        let results: Vec<std::thread::Result<(Vec<u8>, usize)>> = std::thread::scope(|s| {
            let handles: Vec<_> = lines
                .chunks(chunk)
                .enumerate()
                .map(|(i, part)| {
                    let start = first_line + i * chunk;
                    s.spawn(move || {
                        let mut out = Vec::with_capacity(part.len() * 160);
                        let bad = part
                            .iter()
                            .enumerate()
                            .filter(|(j, line)| !answer(engine, line, start + j, format, &mut out))
                            .count();
                        (out, bad)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        for result in results {
            // A worker that panicked lost its lines: stop rather than answer out of step.
            let (out, n) = result.map_err(|_| std::io::Error::other("evaluation failed"))?;
            output.write_all(&out)?;
            bad += n;
        }
        first_line += lines.len();
    }
    output.flush()?;
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_lines() {
        let e = combined(
            r#"203.0.113.7 - frank [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 2326 "https://x.example/" "curl/8.5.0""#,
        )
        .unwrap();
        assert_eq!(e.ip_address, Some("203.0.113.7".parse().unwrap()));
        assert_eq!(e.user_agent.as_deref(), Some("curl/8.5.0"));
        let quoted = quoted_fields(r#"a "b \"c\" d" "e""#).unwrap();
        assert_eq!(quoted, ["b \"c\" d", "e"]);
        assert!(combined("nonsense").is_err());
        assert!(combined(r#"203.0.113.7 - - [x] "GET /" 200 1 "-""#).is_err());
        assert!(combined(r#"203.0.113.7 - - [x] "GET / 200 1 "-" "ua"#).is_err());
        let dash = combined(r#"::1 - - [x] "GET /" 200 1 "-" "-""#).unwrap();
        assert_eq!(dash.user_agent, None);
    }

    #[test]
    fn json_lines_name_what_is_wrong() {
        assert!(parse("{}", Format::Json).is_ok());
        let e = parse(r#"{"ipAddress":"nope"}"#, Format::Json).unwrap_err();
        assert!(e.starts_with("ipAddress: "), "{e}");
        let e = parse(r#"{"ip":"1.2.3.4"}"#, Format::Json).unwrap_err();
        assert!(e.contains("unknown field `ip`"), "{e}");
        let e = parse(r#"{"signals":{"plugins":-1}}"#, Format::Json).unwrap_err();
        assert!(e.starts_with("signals.plugins: "), "{e}");
        assert!(parse("[", Format::Json).is_err());
        assert!(parse(r#"{"signals":{"brandNew":1}}"#, Format::Json).is_ok());
    }
}
