//! `vigil evaluate`: scores visits in batch, one answer line per input line, in order.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::IpAddr;

use serde::Serialize;

use crate::engine::Engine;
use crate::evidence::Evidence;
use crate::reasons::Code;

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
            headers: Option<crate::evidence::Headers>,
            signals: Option<crate::evidence::Signals>,
            wire: Option<crate::wire::Wire>,
            request: Option<crate::evidence::RequestLine>,
        }
        let s = Strict::deserialize(d)?;
        Ok(Self(Evidence {
            ip_address: s.ip_address,
            user_agent: s.user_agent,
            headers: s.headers,
            signals: s.signals,
            wire: s.wire,
            request: s.request,
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
        wire: None,
        request: None,
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
/// What a run scored: lines, bad lines, visits at or above 0.5 on each score, and how often each
/// reason fired.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub lines: usize,
    pub bad: usize,
    pub bots: usize,
    pub proxies: usize,
    pub reasons: HashMap<Code, usize>,
}

impl Summary {
    fn add(&mut self, other: Summary) {
        self.lines += other.lines;
        self.bad += other.bad;
        self.bots += other.bots;
        self.proxies += other.proxies;
        for (code, n) in other.reasons {
            *self.reasons.entry(code).or_default() += n;
        }
    }

    /// The summary as a small table: counts, then the `top` reasons that fired most.
    pub fn table(&self, top: usize) -> String {
        let pct = |n: usize| {
            let scored = self.lines - self.bad;
            if scored == 0 {
                0.0
            } else {
                100.0 * n as f64 / scored as f64
            }
        };
        let mut t = format!(
            "lines    {:>10}\nbad      {:>10}\nbots     {:>10}  {:.2}% scoreBot >= 0.5\nproxies  {:>10}  {:.2}% scoreProxyVpn >= 0.5\n",
            self.lines,
            self.bad,
            self.bots,
            pct(self.bots),
            self.proxies,
            pct(self.proxies)
        );
        let mut reasons: Vec<(&Code, &usize)> = self.reasons.iter().collect();
        reasons.sort_by(|a, b| {
            b.1.cmp(a.1)
                .then_with(|| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)))
        });
        if !reasons.is_empty() {
            t.push_str("top reasons:\n");
        }
        for (code, n) in reasons.into_iter().take(top) {
            let name = serde_json::to_string(code).unwrap_or_default();
            t.push_str(&format!("  {:<28} {n:>10}\n", name.trim_matches('"')));
        }
        t
    }
}

fn answer(
    engine: &Engine,
    line: &str,
    line_no: usize,
    format: Format,
    out: &mut Vec<u8>,
    summary: &mut Summary,
) {
    summary.lines += 1;
    match parse(line, format) {
        Ok(evidence) => {
            let verdict = engine.evaluate(&evidence);
            summary.bots += usize::from(verdict.score_bot >= 0.5);
            summary.proxies += usize::from(verdict.score_proxy_vpn >= 0.5);
            for r in &verdict.reasons {
                *summary.reasons.entry(r.code).or_default() += 1;
            }
            let _ = serde_json::to_writer(&mut *out, &verdict);
        }
        Err(why) => {
            summary.bad += 1;
            let message = format!("line {line_no}: {why}");
            let _ = serde_json::to_writer(&mut *out, &Bad { message: &message });
        }
    }
    out.push(b'\n');
}

/// Up to `BATCH` lines of `input`, without their line ends; none at its end.
fn read_batch(input: &mut impl BufRead) -> std::io::Result<Vec<String>> {
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
    Ok(lines)
}

/// One batch's answers, in order, and what it scored.
type Scored = Vec<(Vec<u8>, Summary)>;

/// Writes a scored batch and adds it to `summary`.
fn write_scored(
    scored: Scored,
    output: &mut impl Write,
    summary: &mut Summary,
) -> std::io::Result<()> {
    for (out, part) in scored {
        output.write_all(&out)?;
        summary.add(part);
    }
    Ok(())
}

/// Scores every line of `input` onto `output`, in order, and sums up what it scored. Bad lines are
/// answered `{"message": "line N: ..."}` in their place and counted. I/O errors stop the run
/// (the lines scored before one are answered first).
///
/// The workers score one batch while this thread writes the batch before it and reads the one
/// after: reading and writing are not left to wait for the scoring, nor the scoring for them.
pub fn run(
    engine: &Engine,
    mut input: impl BufRead,
    mut output: impl Write,
    format: Format,
) -> std::io::Result<Summary> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let mut summary = Summary::default();
    let mut first_line = 1;
    let mut lines = read_batch(&mut input)?;
    let mut written: Scored = Vec::new();
    while !lines.is_empty() {
        let chunk = lines.len().div_ceil(workers);
        let (scored, io) = std::thread::scope(|s| {
            let handles: Vec<_> = lines
                .chunks(chunk)
                .enumerate()
                .map(|(i, part)| {
                    let start = first_line + i * chunk;
                    s.spawn(move || {
                        let mut out = Vec::with_capacity(part.len() * 160);
                        let mut summary = Summary::default();
                        for (j, line) in part.iter().enumerate() {
                            answer(engine, line, start + j, format, &mut out, &mut summary);
                        }
                        (out, summary)
                    })
                })
                .collect();
            let io = write_scored(std::mem::take(&mut written), &mut output, &mut summary)
                .and_then(|()| read_batch(&mut input));
            let scored: Vec<std::thread::Result<(Vec<u8>, Summary)>> =
                handles.into_iter().map(|h| h.join()).collect();
            (scored, io)
        });
        // A worker that panicked lost its lines: stop rather than answer out of step.
        written = scored
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|_| std::io::Error::other("evaluation failed"))?;
        first_line += lines.len();
        lines = match io {
            Ok(next) => next,
            Err(e) => {
                write_scored(written, &mut output, &mut summary)?;
                return Err(e);
            }
        };
    }
    write_scored(written, &mut output, &mut summary)?;
    output.flush()?;
    Ok(summary)
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
    fn a_run_sums_up_what_it_scored() {
        let engine = Engine::embedded().unwrap();
        let input = "{\"userAgent\": \"curl/8.5.0\"}\n{\"ipAddress\": \"nope\"}\n{}\n{\"userAgent\": \"python-requests/2.32\", \"ipAddress\": \"3.5.140.1\"}\n";
        let mut out = Vec::new();
        let s = run(&engine, input.as_bytes(), &mut out, Format::Json).unwrap();
        assert_eq!((s.lines, s.bad, s.bots, s.proxies), (4, 1, 2, 1));
        assert_eq!(s.reasons.get(&Code::BotUserAgent), Some(&2));
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 4);
        let table = s.table(10);
        assert!(table.contains("bots              2  66.67%"), "{table}");
        assert!(table.contains("bot_user_agent"), "{table}");
    }

    #[test]
    fn answers_keep_their_lines_order_across_batches() {
        let engine = Engine::embedded().unwrap();
        let n = 2 * BATCH + 5;
        let bad = BATCH + 3;
        let input: String = (1..=n)
            .map(|i| {
                if i == bad {
                    "{\"ipAddress\": \"nope\"}\n".to_owned()
                } else if i % 2 == 0 {
                    "{\"userAgent\": \"curl/8.5.0\"}\n".to_owned()
                } else {
                    "{}\n".to_owned()
                }
            })
            .collect();
        let mut out = Vec::new();
        let s = run(&engine, input.as_bytes(), &mut out, Format::Json).unwrap();
        let answers: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
        assert_eq!((s.lines, s.bad, answers.len()), (n, 1, n));
        assert!(answers[bad - 1].starts_with(&format!("{{\"message\":\"line {bad}: ")));
        // Every even line is curl's, a bot; every odd one scores nothing.
        for (i, a) in answers.iter().enumerate().filter(|(i, _)| i + 1 != bad) {
            assert_eq!(
                a.contains("bot_user_agent"),
                (i + 1) % 2 == 0,
                "line {}",
                i + 1
            );
        }
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
