use super::*;
use crate::engine::Engine;
use crate::places::Kind;

/// What the tables answer for `ip`, each by its own lookup.
fn by_tables(e: &Engine, ip: IpAddr) -> Place {
    Place {
        range: e.ranges().table().find(ip),
        network: e.networks().table().find(ip),
        country: e.geo().country(ip),
    }
}

/// Every address where a table's step or (every third) country leaf starts, the address
/// before each, and addresses spread over both families find what the tables find. Every
/// IPv4 address is the index's; IPv6 ones are but where a /32 found no place.
#[test]
fn the_index_answers_what_the_tables_answer() {
    let engine = Engine::embedded().unwrap();
    let index = engine.index_addresses().expect("the data is indexed");
    let geo = engine.geo();
    let mut checked = [0; 2];
    let mut left = [0; 2];
    let mut check = |ip: IpAddr| {
        let family = usize::from(ip.is_ipv6());
        checked[family] += 1;
        match index.find(ip, geo) {
            Some(place) => assert_eq!(place, by_tables(&engine, ip), "{ip}"),
            None => left[family] += 1,
        }
    };
    let v4 = |x: u32| IpAddr::from(Ipv4Addr::from(x));
    let v6 = |x: u128| IpAddr::from(Ipv6Addr::from(x));
    for table in [engine.ranges().table(), engine.networks().table()] {
        for (s, _) in table.steps_v4().unwrap() {
            check(v4(s));
            check(v4(s.wrapping_sub(1)));
        }
        for (s, _) in table.steps_v6().unwrap() {
            check(v6(s));
            check(v6(s.wrapping_sub(1)));
        }
    }
    let tree = index.tree.tree();
    let mut leaves = Vec::new();
    tree.walk(tree.v4_start, 0u32, 0, 32, false, |s, _| leaves.push(s));
    for s in leaves.into_iter().step_by(3) {
        check(v4(s));
        check(v4(s.wrapping_sub(1)));
    }
    let mut leaves = Vec::new();
    tree.walk(0, 0u128, 0, 128, true, |s, _| leaves.push(s));
    for s in leaves.into_iter().skip(1).step_by(3) {
        check(v6(s));
        check(v6(s.wrapping_sub(1)));
    }
    // Spread addresses (a fixed generator), IPv6 ones mostly in the global unicast block.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..50_000 {
        check(v4(next() as u32));
        let r = u128::from(next()) << 64 | u128::from(next());
        check(v6(r >> 3 | 1 << 125));
    }
    assert_eq!(left[0], 0, "IPv4 addresses left to the tables");
    assert!(
        checked[1] > 100_000 && left[1] < checked[1],
        "{left:?} of {checked:?}"
    );
    // IPv4-mapped addresses, and IPv6 ones whose walk leads into the IPv4 tree (`::/96`
    // here), are the tables'.
    for s in [
        "::ffff:185.220.101.1",
        "::ffff:3.5.140.1",
        "::185.220.101.1",
    ] {
        assert_eq!(index.find(s.parse().unwrap(), geo), None, "{s}");
    }
}

#[test]
fn an_address_finds_its_range_network_and_country_in_one_search() {
    let engine = Engine::embedded().unwrap();
    let index = engine.index_addresses().unwrap();
    let place = |s: &str| index.find(s.parse().unwrap(), engine.geo()).unwrap();
    let tor = place("185.220.101.1");
    assert_eq!(
        engine.ranges().label(tor.range.unwrap()).map(|l| l.kind),
        Some(Kind::Tor)
    );
    let aws = place("3.5.140.1");
    assert!(aws.range.is_some() && aws.network == Some(16509), "{aws:?}");
    assert_eq!(place("84.128.0.1").country, Some(*b"DE"));
    assert_eq!(place("84.128.0.1").range, None);
    assert_eq!(place("1.0.255.255").country, Some(*b"TH"));
    assert_eq!(place("2a05:d018::1").network, Some(16509));
    // Laid out: the /16s and /32s looked up, not the rest.
    assert_eq!(index.prefixes(), (4, 1));
}

#[test]
fn ipv6_prefixes_without_a_place_are_left_to_the_tables() {
    let engine = Engine::embedded().unwrap();
    let index = engine.index_addresses().unwrap();
    // Prefixes whose two places are the same pair, by the hash: a third has none.
    let slot = |p: u32| (p.wrapping_mul(0x9e37_79b1) >> 19) as usize;
    let mut same = (0u32..).filter(|&p| slot(p) == slot(0x2a05_d018));
    let found: Vec<Option<Place>> = (0..3)
        .map(|_| {
            let p = u128::from(same.next().unwrap()) << 96 | 1;
            index.find(IpAddr::from(Ipv6Addr::from(p)), engine.geo())
        })
        .collect();
    assert!(found[0].is_some() && found[1].is_some() && found[2].is_none());
}

#[test]
fn steps_join_three_sources() {
    let packing = Packing::of(3, 3).unwrap();
    let (r, n) = (packing.range_shift, packing.network_shift);
    assert_eq!((r, n), (12, 10));
    let a = vec![(0u32, 0), (10, 1), (20, 0)];
    let b = vec![(0u32, 0), (15, 2)];
    let c = [(0u32, 7), (10, 7), (30, FALLBACK)];
    let (starts, values) = merge(packing, a, b, c.into_iter());
    assert_eq!(starts, [0, 10, 15, 20, 30]);
    let want = [7, 1 << r | 7, 1 << r | 2 << n | 7, 2 << n | 7, FALLBACK];
    assert_eq!(values, want);
    let steps = Steps {
        starts: starts.into(),
        values: values.into(),
    };
    for (x, want) in [
        (0, 7),
        (9, 7),
        (10, want[1]),
        (14, want[1]),
        (15, want[2]),
        (19, want[2]),
        (20, want[3]),
        (29, want[3]),
        (30, FALLBACK),
        (u32::MAX, FALLBACK),
    ] {
        assert_eq!(steps.at(x), want, "{x}");
    }
    assert!(Packing::of(1 << 10, 1 << 11).is_none());
    assert_eq!(country_number(Some(*b"DE")), 3 * 26 + 4 + 1);
    assert_eq!(
        (country_number(Some(*b"ZZ")), country_number(None)),
        (676, 0)
    );
}
