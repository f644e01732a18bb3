//! The table's key vocabulary: attribute names, index names, and how each item's partition and
//! sort keys are spelled ([`super::items`] has the layout they make).

use crate::domain::insight::Granularity;
use crate::domain::velocity::{CounterItem, ItemSpan, Kind};
use crate::domain::{AccountId, ProjectId, ResultPosition, SessionId, Timestamp, WebhookId};

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const PROJECT_SK: &str = "PROJECT";
pub const ACCOUNT_SK: &str = "ACCOUNT";
pub const KEY_SK: &str = "APIKEY";
pub const WEBHOOK_PREFIX: &str = "WEBHOOK#";
pub const WEBHOOK_COUNT_SK: &str = "WEBHOOKCOUNT";
pub const PROJECT_COUNT_SK: &str = "PROJECTCOUNT";
pub const ACCOUNT_PROJECT_PREFIX: &str = "PROJECT#";
/// The table's TTL attribute (epoch seconds): counters of past windows and periods expire by it.
pub const TTL: &str = "ttl";
pub const CHECKPOINT_SK: &str = "CHECKPOINT";
/// The sparse index of pending deliveries, by due time.
pub const DUE_INDEX: &str = "due";
pub const DUE: &str = "due";
pub const DUE_AT: &str = "dueAt";
/// The one value of `due`: every pending delivery sits in one index partition, ordered by `dueAt`.
pub const DUE_PARTITION: &str = "pending";
/// The sparse index of session summaries: partition `pk` (the project), sorted by `seen`.
pub const SESSIONS_INDEX: &str = "sessions";
/// The devices index: session summaries by their project's device key (`devicePk`), by `seen`.
pub const DEVICES_INDEX: &str = "devices";
pub const DEVICE_PK: &str = "devicePk";
pub const SEEN: &str = "seen";
/// Statistics items per bucket: one event adds to one of them (by its session), so that a busy
/// project's hour is spread over this many items; a range's query reads them all.
pub const STATS_SHARDS: u64 = 4;

/// A velocity counter item's sort key, under its project's partition:
/// `VEL#<a|d|p>#<subject>#<H|D>#<start>`. A subject's items sort side by side, so that one
/// range reads a visit's four (the SQLite store's read-ahead counts on it).
pub fn velocity_sk(item: CounterItem<'_>) -> String {
    let kind = match item.kind {
        Kind::Address => 'a',
        Kind::Device => 'd',
        Kind::Project => 'p',
    };
    let span = match item.span {
        ItemSpan::Hour => 'H',
        ItemSpan::Day => 'D',
    };
    format!("VEL#{kind}#{}#{span}#{}", item.name, item.start)
}

pub fn project_pk(p: &ProjectId) -> String {
    format!("PROJECT#{p}")
}
/// The devices index's partition of one project's device key.
pub fn device_pk(p: &ProjectId, device: &str) -> String {
    format!("PROJECT#{p}#{device}")
}
pub fn account_pk(a: &AccountId) -> String {
    format!("ACCOUNT#{a}")
}
pub fn public_key_pk(key: &str) -> String {
    format!("PUBLICKEY#{key}")
}
pub fn key_pk(hash: &str) -> String {
    format!("APIKEY#{hash}")
}
pub fn session_sk(s: &SessionId) -> String {
    format!("SESSION#{s}")
}
/// Every result sort key of a session starts with this.
pub fn results_prefix(s: &SessionId) -> String {
    format!("SESSION#{s}#RESULT#")
}
/// Sort keys order by `createdAt`, then by write sequence; the fixed widths make text order equal
/// to that order.
pub fn result_sk(s: &SessionId, at: ResultPosition) -> String {
    format!("SESSION#{s}#RESULT#{}#{:020}", at.created_at, at.seq)
}
pub fn account_project_sk(p: &ProjectId) -> String {
    format!("{ACCOUNT_PROJECT_PREFIX}{p}")
}
pub fn rate_sk(second: i64) -> String {
    format!("RATE#{second}")
}
pub fn usage_sk(period_start: Timestamp) -> String {
    format!("USAGE#{period_start}")
}
/// Shard `i` of a spread counter whose first shard is `sk` (the first keeps the plain key, so a
/// plan of one shard writes exactly what it always did).
pub fn shard_sk(sk: &str, i: u32) -> String {
    if i == 0 {
        sk.to_owned()
    } else {
        format!("{sk}#{i}")
    }
}
/// A project's visits in one second (under the project's key).
pub fn visit_rate_sk(second: i64) -> String {
    format!("VRATE#{second}")
}
/// One source's visits to a project in one second (under the project's key).
pub fn visit_source_sk(source: &str, second: i64) -> String {
    format!("VSRC#{source}#{second}")
}
/// An account's visits in a billing period: SQLite's own counter; DynamoDB keeps them as
/// attributes of the period's usage item, where one condition can read both counts.
pub fn visits_sk(period_start: Timestamp) -> String {
    format!("VISITS#{period_start}")
}
/// The sessions index's sort key: when the session was last seen, then its id. The fixed-width
/// time first makes text order that order; ids cannot contain `#`.
pub fn seen_key(last_seen_at: Timestamp, s: &SessionId) -> String {
    format!("{last_seen_at}#{s}")
}
/// Every statistics sort key of one granularity starts with this.
pub fn stats_prefix(g: Granularity) -> &'static str {
    match g {
        Granularity::Hour => "STATS#H#",
        Granularity::Day => "STATS#D#",
    }
}
/// The bucket's items sort between `stats_sk_bound(g, start)` and the next bucket's bound.
pub fn stats_sk_bound(g: Granularity, start: Timestamp) -> String {
    format!("{}{start}", stats_prefix(g))
}
pub fn stats_sk(g: Granularity, start: Timestamp, shard: u64) -> String {
    format!("{}{start}#{shard}", stats_prefix(g))
}
/// The statistics shard a session's events count in.
pub fn stats_shard(s: &SessionId) -> u64 {
    s.stable_hash() % STATS_SHARDS
}
/// The prefix of a statistics item's reason counters (top-level attributes, so that DynamoDB can
/// `ADD` to one that does not exist yet).
pub const REASON_ATTR_PREFIX: &str = "r_";

pub fn webhook_sk(w: &WebhookId) -> String {
    format!("{WEBHOOK_PREFIX}{w}")
}
pub fn checkpoint_pk(name: &str) -> String {
    format!("CHECKPOINT#{name}")
}
/// Every label's sort key starts with this; the session id follows.
pub const LABEL_PREFIX: &str = "LABEL#";
pub fn label_sk(s: &SessionId) -> String {
    format!("{LABEL_PREFIX}{s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn velocity_items_keep_their_spelling() {
        let item = |kind, name, span, start| {
            velocity_sk(CounterItem {
                kind,
                name,
                span,
                start,
            })
        };
        assert_eq!(
            item(Kind::Address, "2001:db8:0:1::/64", ItemSpan::Hour, 7200),
            "VEL#a#2001:db8:0:1::/64#H#7200"
        );
        assert_eq!(item(Kind::Device, "dk1", ItemSpan::Day, 0), "VEL#d#dk1#D#0");
        assert_eq!(
            item(Kind::Project, "3", ItemSpan::Hour, 3600),
            "VEL#p#3#H#3600"
        );
    }
}
