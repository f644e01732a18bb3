//! Metrics from the code, in CloudWatch Embedded Metric Format: each data point set is one JSON
//! log line that CloudWatch Logs turns into metrics (no API call, nothing on the request's path
//! but a line of output). Dimensions are few and bounded (route, status class, outcome, kind);
//! the project is a property, never a dimension, so the metrics' cost does not grow with
//! customers.
//!
//! The code calls the typed functions below wherever it is; they emit a `tracing` event with
//! target [`TARGET`] carrying the finished line. The Lambda bootstrap installs [`EmfLayer`], which
//! writes those lines as they are to stdout (and the ordinary log formatter skips them); `vigil
//! serve` has no such layer, so there they cost one disabled-event check.

use std::io::Write;
use std::sync::Mutex;

use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// The `tracing` target of metric events.
pub const TARGET: &str = "vigil::metrics";
/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Vigil";

/// One EMF line: `metrics` are (name, unit, value); `dimensions` are the values, and `sets` the
/// dimension sets they are published under (an aggregate set lets one alarm read every route).
fn line(
    dimensions: &[(&str, &str)],
    sets: &[&[&str]],
    metrics: &[(&str, &str, f64)],
    properties: &[(&str, Value)],
) -> String {
    let mut root = serde_json::Map::new();
    for (k, v) in dimensions {
        root.insert((*k).to_owned(), json!(v));
    }
    for (name, _, value) in metrics {
        root.insert((*name).to_owned(), json!(value));
    }
    for (k, v) in properties {
        root.insert((*k).to_owned(), v.clone());
    }
    let defs: Vec<Value> = metrics
        .iter()
        .map(|(name, unit, _)| json!({"Name": name, "Unit": unit}))
        .collect();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": chrono::Utc::now().timestamp_millis(),
            "CloudWatchMetrics": [{"Namespace": NAMESPACE, "Dimensions": sets, "Metrics": defs}],
        }),
    );
    Value::Object(root).to_string()
}

/// Emits the line `line` builds, built only when some layer takes metric events: `vigil serve`
/// has none, and building it (a JSON object and a clock read) was a visible share of a request.
fn emit(line: impl FnOnce() -> String) {
    if tracing::enabled!(target: TARGET, tracing::Level::INFO) {
        tracing::info!(target: TARGET, emf = %line());
    }
}

/// `2xx`, `4xx`, `5xx`: the status class, a bounded dimension.
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// One answered request of `route`: its count and latency, by route and status class.
pub fn request(route: &str, status: u16, latency_ms: f64) {
    emit(|| {
        line(
            &[("Route", route), ("StatusClass", status_class(status))],
            &[&["Route", "StatusClass"], &["StatusClass"]],
            &[
                ("Requests", "Count", 1.0),
                ("Latency", "Milliseconds", latency_ms),
            ],
            &[("status", json!(status))],
        )
    });
}

/// One evaluation by the engine: its time, and whether it flagged a bot or a proxy (0.5 or
/// more); the project is a property.
pub fn evaluation(project: &str, engine_us: f64, bot: bool, proxy: bool) {
    emit(|| {
        line(
            &[],
            &[&[]],
            &[
                ("EngineTime", "Microseconds", engine_us),
                ("Evaluations", "Count", 1.0),
                ("FlaggedBot", "Count", f64::from(u8::from(bot))),
                ("FlaggedProxyVpn", "Count", f64::from(u8::from(proxy))),
            ],
            &[("project", json!(project))],
        )
    });
}

/// One webhook delivery attempt, by outcome (`delivered`, `failed`, `gone`) and attempt number
/// (capped at 8: retries past it are counted as 8).
pub fn delivery(outcome: &str, attempt: usize) {
    let attempt = attempt.clamp(1, 8).to_string();
    emit(|| {
        line(
            &[("Outcome", outcome), ("Attempt", &attempt)],
            &[&["Outcome", "Attempt"], &["Outcome"]],
            &[("Deliveries", "Count", 1.0)],
            &[],
        )
    });
}

/// One request refused by the plan or a visit budget, by kind (`plan_inactive`, `rate`,
/// `quota`).
pub fn refusal(kind: &str) {
    emit(|| {
        line(
            &[("Kind", kind)],
            &[&["Kind"]],
            &[("Refusals", "Count", 1.0)],
            &[],
        )
    });
}

/// Writes metric events' lines, as they are, one per line, to its writer (stdout in Lambda).
pub struct EmfLayer<W> {
    out: Mutex<W>,
}

impl<W: Write> EmfLayer<W> {
    pub fn new(out: W) -> Self {
        Self {
            out: Mutex::new(out),
        }
    }
}

struct EmfField(Option<String>);

impl Visit for EmfField {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "emf" {
            self.0 = Some(format!("{value:?}"));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "emf" {
            self.0 = Some(value.to_owned());
        }
    }
}

impl<S, W> tracing_subscriber::Layer<S> for EmfLayer<W>
where
    S: tracing::Subscriber,
    W: Write + Send + 'static,
{
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != TARGET {
            return;
        }
        let mut field = EmfField(None);
        event.record(&mut field);
        if let (Some(line), Ok(mut out)) = (field.0, self.out.lock()) {
            // A lost metric line must never fail a request.
            let _ = writeln!(out, "{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(f: impl FnOnce()) -> Vec<Value> {
        let buf = Buf::default();
        let subscriber = tracing_subscriber::registry().with(EmfLayer::new(buf.clone()));
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    }

    #[test]
    fn every_metric_is_one_emf_line_with_bounded_dimensions() {
        let out = lines(|| {
            request("CreateEvent", 201, 12.5);
            evaluation("prj_1", 2.1, true, false);
            delivery("failed", 12);
            refusal("rate");
            tracing::info!("an ordinary log line is not a metric");
        });
        assert_eq!(out.len(), 4);
        let r = &out[0];
        assert_eq!(
            (
                &r["Route"],
                &r["StatusClass"],
                &r["Requests"],
                &r["Latency"]
            ),
            (
                &json!("CreateEvent"),
                &json!("2xx"),
                &json!(1.0),
                &json!(12.5)
            )
        );
        let cw = &r["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], "Vigil");
        assert_eq!(
            cw["Dimensions"],
            json!([["Route", "StatusClass"], ["StatusClass"]])
        );
        assert_eq!(
            cw["Metrics"],
            json!([{"Name": "Requests", "Unit": "Count"}, {"Name": "Latency", "Unit": "Milliseconds"}])
        );
        assert!(r["_aws"]["Timestamp"].as_i64().unwrap() > 1_700_000_000_000);
        // The project is a property: no dimension set names it.
        let e = &out[1];
        assert_eq!(e["project"], "prj_1");
        assert_eq!(e["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([[]]));
        assert_eq!(
            (&e["FlaggedBot"], &e["FlaggedProxyVpn"]),
            (&json!(1.0), &json!(0.0))
        );
        assert_eq!(
            (&out[2]["Outcome"], &out[2]["Attempt"]),
            (&json!("failed"), &json!("8"))
        );
        assert_eq!(out[3]["Kind"], "rate");
    }

    #[test]
    fn status_classes() {
        assert_eq!(
            [200, 204, 301, 404, 429, 500, 503].map(status_class),
            ["2xx", "2xx", "3xx", "4xx", "4xx", "5xx", "5xx"]
        );
    }
}
