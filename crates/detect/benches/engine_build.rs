//! What a cold start pays for the engine (`cargo bench -p vigil-detect --bench engine_build`):
//! building it from the data compiled into the binary, whole and by part, as medians of 30 runs.
//! Here, not in the application's package, so that benching it does not build every Lambda
//! function with LTO first.
//!
//! Fails if the built engine does not find the ranges and networks it is measured with.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use vigil_detect::Engine;
use vigil_detect::networks::Networks;
use vigil_detect::places::{Geo, Ranges};
use vigil_detect::table::Table;
use vigil_detect::ua::BotPatterns;

macro_rules! data {
    ($file:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/", $file))
    };
}

fn median<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
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
    let geo = median(runs, || {
        Geo::load(Cow::Borrowed(mmdb), data!("zones.tsv")).expect("data")
    });
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
        let networks = Networks::new(
            include_str!(concat!(env!("OUT_DIR"), "/networks.meta")),
            Table::from_static(built!("networks.v4"), built!("networks.v6"))
                .expect("whole records"),
        )
        .expect("data");
        (ranges, networks)
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "engine build from the built-in data, median of {runs}: {:.2} ms; of which the bot \
         patterns (automata read, expressions compiled) {:.2} ms, the countries and zones {:.2} ms, the address tables \
         (read in place; labels and networks named) {:.2} ms, the rest (agents, wire) {:.2} ms",
        ms(whole),
        ms(patterns),
        ms(geo),
        ms(tables),
        ms(whole.saturating_sub(patterns + geo + tables))
    );
    println!(
        "tables: {} operator ranges, {} hosting networks, country database {} KiB",
        engine.ranges().len(),
        engine.networks().len(),
        mmdb.len() / 1024
    );
}
