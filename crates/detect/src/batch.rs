//! `vigil evaluate`: scores visits in batch, one answer line per input line, in order.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::IpAddr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use crate::engine::Engine;
use crate::evidence::Evidence;
use crate::reasons::{Code, Target};
use crate::verdict::Verdict;

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
            // An access log's line, read as serde reads it, without serde.
            if let Some(e) = plain_line(line) {
                return Ok(e);
            }
            // Nearly every other line is good too: read it without keeping the path to each
            // member, and read a bad one again with it, for the message.
            use serde::Deserialize;
            let de = &mut serde_json::Deserializer::from_str(line);
            if let Ok(s) = StrictEvidence::deserialize(de) {
                return Ok(s.0);
            }
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

/// The line an access log makes, `{"ipAddress": "...", "userAgent": "..."}` (either member, both
/// or none, in either order, each a string without escapes): the evidence serde reads from it
/// (tested), or none for any other line (another member, an escape, a null, a member twice, an
/// address that does not parse), which serde reads.
fn plain_line(line: &str) -> Option<Evidence> {
    let b = line.as_bytes();
    let mut i = 0;
    // JSON's whitespace, as serde_json skips it.
    let skip = |i: &mut usize| {
        while b
            .get(*i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            *i += 1;
        }
    };
    // A string at `i` without escapes or control characters, and past it.
    let string = |i: &mut usize| -> Option<&str> {
        if b.get(*i) != Some(&b'"') {
            return None;
        }
        let start = *i + 1;
        let len = stop(&b[start..])?;
        if b[start + len] != b'"' {
            return None;
        }
        *i = start + len + 1;
        // Quotes are ASCII: these are character boundaries.
        line.get(start..start + len)
    };
    skip(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    skip(&mut i);
    let mut e = Evidence::default();
    if b.get(i) == Some(&b'}') {
        return Some(e);
    }
    loop {
        let key = string(&mut i)?;
        skip(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        skip(&mut i);
        let value = string(&mut i)?;
        match key {
            "ipAddress" if e.ip_address.is_none() => e.ip_address = Some(value.parse().ok()?),
            "userAgent" if e.user_agent.is_none() => e.user_agent = Some(value.to_owned()),
            _ => return None,
        }
        skip(&mut i);
        match b.get(i) {
            Some(b',') => {
                i += 1;
                skip(&mut i);
            }
            // What follows the object is not read (serde's reading of a line does not either).
            Some(b'}') => return Some(e),
            _ => return None,
        }
    }
}

/// Where the first quote, backslash or control character of `b` is (where a JSON string without
/// escapes ends, or is not one), eight bytes at a time.
fn stop(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (words, _) = b.as_chunks::<8>();
    for (n, word) in words.iter().enumerate() {
        let x = u64::from_le_bytes(*word);
        // A byte's top bit for each byte that is zero after the xor, or below 0x20 (a borrow
        // only ever marks a byte above one that is: the lowest mark is the first).
        let zero = |y: u64| y.wrapping_sub(ONES) & !y;
        let found = (zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x))
            & HIGH;
        if found != 0 {
            return Some(n * 8 + found.trailing_zeros() as usize / 8);
        }
    }
    let from = words.len() * 8;
    (b[from..].iter())
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|i| from + i)
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

/// Lines a thread scores at a time (a 32nd of a batch).
const PIECE: usize = 256;

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

/// What a worker counts as it scores: [`Summary`]'s numbers, each reason's count by its code's
/// place in [`Code`] (no map entry per reason).
struct Counts {
    summary: Summary,
    reasons: Vec<usize>,
    numbers: Numbers,
}

impl Counts {
    fn new() -> Self {
        Self {
            summary: Summary::default(),
            reasons: vec![0; crate::reasons::TABLE.len()],
            numbers: Numbers::default(),
        }
    }

    fn into_summary(mut self) -> Summary {
        for (code, ..) in crate::reasons::TABLE {
            let n = self.reasons[*code as usize];
            if n > 0 {
                self.summary.reasons.insert(*code, n);
            }
        }
        self.summary
    }
}

fn answer(
    engine: &Engine,
    line: &str,
    line_no: usize,
    format: Format,
    out: &mut Vec<u8>,
    counts: &mut Counts,
) {
    let summary = &mut counts.summary;
    summary.lines += 1;
    match parse(line, format) {
        Ok(evidence) => {
            let verdict = engine.evaluate(&evidence);
            summary.bots += usize::from(verdict.score_bot >= 0.5);
            summary.proxies += usize::from(verdict.score_proxy_vpn >= 0.5);
            for r in &verdict.reasons {
                counts.reasons[r.code as usize] += 1;
            }
            write_verdict(out, &verdict, &mut counts.numbers);
        }
        Err(why) => {
            summary.bad += 1;
            let message = format!("line {line_no}: {why}");
            let _ = serde_json::to_writer(&mut *out, &Bad { message: &message });
        }
    }
    out.push(b'\n');
}

/// `verdict` as serde_json writes it (tested byte for byte), without serde's machinery per
/// member: most of an answer is fixed text, and its strings rarely need an escape.
fn write_verdict(out: &mut Vec<u8>, verdict: &Verdict, numbers: &mut Numbers) {
    out.extend_from_slice(b"{\"scoreBot\":");
    numbers.write(out, verdict.score_bot);
    out.extend_from_slice(b",\"scoreProxyVpn\":");
    numbers.write(out, verdict.score_proxy_vpn);
    out.extend_from_slice(b",\"reasons\":[");
    for (i, r) in verdict.reasons.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"code\":");
        string(out, r.code.name());
        out.extend_from_slice(match r.score {
            Target::Bot => b",\"score\":\"bot\",\"weight\":",
            Target::ProxyVpn => b",\"score\":\"proxyVpn\",\"weight\":",
        });
        numbers.write(out, r.weight);
        out.extend_from_slice(b",\"detail\":");
        string(out, &r.detail);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// Numbers as serde_json writes them, the last few of them kept: the scores and weights of
/// answers take few values (most visits score 0.018 on both).
#[derive(Default)]
struct Numbers {
    /// By a hash of the number: its bits, and its text's length (0: none yet) and bytes.
    slots: [(u64, u8, [u8; 24]); 16],
}

impl Numbers {
    fn write(&mut self, out: &mut Vec<u8>, x: f64) {
        let bits = x.to_bits();
        let slot = &mut self.slots[((bits ^ bits >> 23 ^ bits >> 41) % 16) as usize];
        let (known, len, text) = slot;
        if *len > 0 && *known == bits {
            out.extend_from_slice(&text[..usize::from(*len)]);
            return;
        }
        let start = out.len();
        let _ = serde_json::to_writer(&mut *out, &x);
        let written = &out[start..];
        if let Ok(n) = u8::try_from(written.len())
            && (1..=24).contains(&n)
        {
            text[..written.len()].copy_from_slice(written);
            (*known, *len) = (bits, n);
        }
    }
}

/// A string as serde_json writes it: quoted, with control characters, quotes and backslashes
/// escaped (serde_json writes those that have one).
fn string(out: &mut Vec<u8>, s: &str) {
    if stop(s.as_bytes()).is_some() {
        let _ = serde_json::to_writer(&mut *out, s);
    } else {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Up to `BATCH` lines of `input`: one text, and where each line lies in it without its line
/// end (not a string per line); no lines at its end.
struct Lines {
    text: String,
    ends: Vec<(usize, usize)>,
}

impl Lines {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn get(&self, i: usize) -> &str {
        let (start, end) = self.ends[i];
        &self.text[start..end]
    }
}

fn read_batch(input: &mut impl BufRead) -> std::io::Result<Lines> {
    let mut lines = Lines {
        text: String::new(),
        ends: Vec::with_capacity(BATCH),
    };
    for _ in 0..BATCH {
        let start = lines.text.len();
        if input.read_line(&mut lines.text)? == 0 {
            break;
        }
        let end = start + lines.text[start..].trim_end_matches(['\n', '\r']).len();
        lines.ends.push((start, end));
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
/// after, then scores beside them: reading and writing are not left to wait for the scoring,
/// nor the scoring for them. The threads take the batch's lines 256 at a time.
///
/// A run of more than one batch has the engine lay its addresses out in one table
/// ([`Engine::index_addresses`]): the answers are the same, each address is searched for once
/// instead of once per table.
pub fn run(
    engine: &Engine,
    mut input: impl BufRead,
    output: impl Write,
    format: Format,
) -> std::io::Result<Summary> {
    let lines = read_batch(&mut input)?;
    if lines.len() == BATCH {
        engine.index_addresses();
    }
    score(engine, lines, input, output, format)
}

/// [`run`]'s batches, the first already read.
fn score(
    engine: &Engine,
    mut lines: Lines,
    mut input: impl BufRead,
    mut output: impl Write,
    format: Format,
) -> std::io::Result<Summary> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let mut summary = Summary::default();
    let mut first_line = 1;
    let mut written: Scored = Vec::new();
    while !lines.is_empty() {
        // The batch in pieces that each thread takes in turn as it comes free: a thread the
        // machine's other work holds back leaves its share to the others instead of keeping
        // them waiting at the batch's end.
        let pieces = lines.len().div_ceil(PIECE);
        let next = AtomicUsize::new(0);
        let done: Vec<OnceLock<(Vec<u8>, Summary)>> =
            (0..pieces).map(|_| OnceLock::new()).collect();
        let work = || {
            loop {
                let piece = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = done.get(piece) else { break };
                let (from, to) = (piece * PIECE, ((piece + 1) * PIECE).min(lines.len()));
                let mut out = Vec::with_capacity((to - from) * 160);
                let mut counts = Counts::new();
                for i in from..to {
                    let line = lines.get(i);
                    answer(engine, line, first_line + i, format, &mut out, &mut counts);
                }
                let _ = slot.set((out, counts.into_summary()));
            }
        };
        let (joined, io) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            let io = write_scored(std::mem::take(&mut written), &mut output, &mut summary)
                .and_then(|()| read_batch(&mut input));
            // This thread's reading and writing done, it scores too.
            work();
            let joined: std::thread::Result<Vec<()>> =
                handles.into_iter().map(|h| h.join()).collect();
            (joined, io)
        });
        let scored: Option<Scored> = joined
            .ok()
            .and_then(|_| done.into_iter().map(OnceLock::into_inner).collect());
        // A worker that panicked lost its lines: stop rather than answer out of step.
        written = scored.ok_or_else(|| std::io::Error::other("evaluation failed"))?;
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

    /// The serde reading of a line (what `parse` does without its plain path).
    fn by_serde(line: &str) -> Result<Evidence, String> {
        use serde::Deserialize;
        let de = &mut serde_json::Deserializer::from_str(line);
        StrictEvidence::deserialize(de)
            .map(|s| s.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_string_stops_where_the_first_byte_does() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        let mut text: Vec<u8> =
            b"Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0 \xc3\xa9\xe4\xb8\xad".to_vec();
        text.extend(0x7fu8..=0xff);
        for special in [
            b'"', b'\\', 0, 0x1f, b'\n', 0x20, 0x7f, 0x80, 0xff, 0x21, 0x5b, 0x5d,
        ] {
            for at in 0..text.len() {
                for len in [at + 1, text.len()] {
                    let mut b = text[..len].to_vec();
                    b[at] = special;
                    assert_eq!(stop(&b), naive(&b), "{special:#x} at {at} of {len}");
                }
            }
        }
        assert_eq!(stop(&text), naive(&text));
        assert_eq!(stop(b""), None);
    }

    #[test]
    fn plain_lines_read_as_serde_reads_them() {
        let plain = [
            r#"{"ipAddress":"185.220.101.1","userAgent":"curl/8.5.0"}"#,
            r#"{"userAgent": "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/133.0", "ipAddress": "2a05:d018::1"}"#,
            " {\t\"ipAddress\" :\r\n\"::ffff:1.2.3.4\" } ",
            r#"{}"#,
            r#"{ }"#,
            r#"{"userAgent":""}"#,
            r#"{"userAgent":"Navigateur é 中文"}"#,
            r#"{"ipAddress":"1.2.3.4"} trailing text, which serde does not read either"#,
        ];
        for line in plain {
            let e = plain_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(Ok(e), by_serde(line), "{line}");
        }
        // Lines left to serde: each is read (or refused) by it alone.
        let others = [
            r#"{"ipAddress":"1.2.3.4","ipAddress":"1.2.3.5"}"#,
            r#"{"userAgent":"a","userAgent":"b"}"#,
            r#"{"ipAddress":null}"#,
            r#"{"ipAddress":"nope"}"#,
            r#"{"ipAddress":" 1.2.3.4"}"#,
            r#"{"userAgent":"say \"hi\""}"#,
            r#"{"user\u0041gent":"x"}"#,
            "{\"userAgent\":\"tab\there\"}",
            r#"{"userAgent":"x",}"#,
            r#"{"userAgent":"x" "ipAddress":"1.2.3.4"}"#,
            r#"{"userAgent":"x""#,
            r#"{"userAgent":"x"#,
            r#"{"userAgent":1}"#,
            r#"{"ip":"1.2.3.4"}"#,
            r#"{"headers":{"user-agent":"x"}}"#,
            r#"["1.2.3.4","x"]"#,
            r#"{"#,
            "",
            "\u{feff}{}",
        ];
        for line in others {
            assert_eq!(plain_line(line), None, "{line}");
            let _ = by_serde(line);
        }
    }

    #[test]
    fn answers_are_written_as_serde_json_writes_them() {
        let engine = Engine::embedded().unwrap();
        let lines = [
            r#"{"ipAddress":"185.220.101.1","userAgent":"curl/8.5.0"}"#,
            r#"{"ipAddress":"3.5.140.1","userAgent":"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}"#,
            r#"{"ipAddress":"84.128.0.1"}"#,
            r#"{}"#,
        ];
        let mut verdicts: Vec<_> = (lines.iter())
            .map(|l| engine.evaluate(&parse(l, Format::Json).unwrap()))
            .collect();
        // Details with every kind of character a string may need escaped, and odd numbers.
        let mut odd = verdicts[1].clone();
        for (r, detail) in odd.reasons.iter_mut().zip([
            "quote \" backslash \\ newline \n tab \t nul \0 bell \u{7} del \u{7f}",
            "non-ASCII é 中文 \u{2028}",
        ]) {
            r.detail = detail.into();
            r.weight = 1e-7;
        }
        odd.score_bot = f64::NAN;
        odd.score_proxy_vpn = 1e21;
        verdicts.push(odd);
        // Twice over with one cache of numbers, as a worker writes them.
        let mut numbers = Numbers::default();
        for v in verdicts.iter().chain(&verdicts) {
            let mut out = Vec::new();
            write_verdict(&mut out, v, &mut numbers);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(v).unwrap()
            );
        }
        // Repeats, signs and the values JSON has no number for, through the same cache.
        let xs = [
            0.018,
            -0.0,
            0.0,
            f64::NAN,
            f64::INFINITY,
            1e300,
            -1.5e-300,
            0.018,
            6.5,
            -0.0,
        ];
        let mut out = Vec::new();
        for x in xs {
            numbers.write(&mut out, x);
            out.push(b',');
        }
        let want: String = xs
            .iter()
            .map(|x| serde_json::to_string(x).unwrap() + ",")
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
        // The members written are all serde writes: a new one fails here first.
        let value = serde_json::to_value(&verdicts[1]).unwrap();
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(&value), ["reasons", "scoreBot", "scoreProxyVpn"]);
        assert_eq!(
            keys(&value["reasons"][0]),
            ["code", "detail", "score", "weight"]
        );
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
