//! What a cold start pays for the engine (`cargo bench -p vigil-detect --bench engine_build`):
//! building it from the data compiled into the binary, whole and by part, as medians of 30 runs.
//! Here, not in the application's package, so that benching it does not build every Lambda
//! function with LTO first.
//!
//! Fails if the built engine does not find the ranges and networks it is measured with.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use vigil_detect::networks::Networks;
use vigil_detect::places::{Geo, Ranges};
use vigil_detect::table::Table;
use vigil_detect::ua::BotPatterns;
use vigil_detect::wire::Fingerprints;
use vigil_detect::{Catalogue, Engine};

macro_rules! data {
    ($file:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/", $file))
    };
}

/// The median time `f` takes to build its value, not counting the value's drop (a cold start
/// never drops its engine).
fn median<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let built = std::hint::black_box(f());
            let took = t.elapsed();
            drop(built);
            took
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let runs = if std::env::args().any(|a| a == "--bench") {
        30
    } else {
        3
    };
    let engine = Engine::embedded().expect("the built-in data loads");
    // The answers the timings stand for: a cloud address is found in both tables.
    let aws: std::net::IpAddr = "3.0.0.1".parse().expect("ip");
    assert!(
        engine.ranges().len() > 20_000,
        "the operator ranges are built in"
    );
    assert!(
        engine.ranges().lookup(aws).is_some(),
        "3.0.0.1 is in an operator range"
    );
    assert!(
        engine.networks().lookup(aws).is_some(),
        "3.0.0.1 is in a hosting network"
    );

    let whole = median(runs, || Engine::embedded().expect("data"));
    let patterns = median(runs, || BotPatterns::embedded().expect("data"));
    let mmdb: &'static [u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/country.mmdb"
    ));
    let geo = median(runs, || Geo::built(Cow::Borrowed(mmdb)).expect("data"));
    macro_rules! built {
        ($file:literal) => {
            include_bytes!(concat!(env!("OUT_DIR"), "/", $file))
        };
    }
    let tables = median(runs, || {
        let ranges = Ranges::new(
            include_str!(concat!(env!("OUT_DIR"), "/ranges.meta")),
            Table::from_static(built!("ranges.v4"), built!("ranges.v6")).expect("whole records"),
        )
        .expect("data");
        let networks = Networks::built(
            include_str!(concat!(env!("OUT_DIR"), "/networks.meta")),
            built!("networks.index"),
            Table::from_static(built!("networks.v4"), built!("networks.v6"))
                .expect("whole records"),
        )
        .expect("data");
        (ranges, networks)
    });
    let agents = median(runs, || Catalogue::embedded().expect("data"));
    let wire = median(runs, || {
        Fingerprints::parse(data!("wire-fingerprints.tsv")).expect("data")
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "engine build from the built-in data, median of {runs}: {:.2} ms; of which the bot \
         patterns (automata read, expressions compiled) {:.2} ms, the country database opened and zones {:.2} ms, the address tables \
         (read in place; the operators' labels parsed) {:.2} ms, the agent catalogue (its token automata read) {:.2} ms, the \
         wire fingerprints {:.2} ms",
        ms(whole),
        ms(patterns),
        ms(geo),
        ms(tables),
        ms(agents),
        ms(wire)
    );
    println!(
        "tables: {} operator ranges, {} hosting networks, country database {} KiB",
        engine.ranges().len(),
        engine.networks().len(),
        mmdb.len() / 1024
    );
}
