//! The plan's counters by claims: a process counts an account's requests against blocks of the
//! second's and the period's budget that it has claimed from the file, instead of writing each
//! request to the file.
//!
//! Why: otherwise every authenticated request counts itself in a write transaction, and pays for
//! the writer's queue (a thread woken each way, a savepoint, a commit).
//!
//! Why the limits stay exact:
//! - The file stays the one account of what is spent: a claim adds its whole block to the
//!   counter in the same guarded upsert as before, so no process, nor any two, can hand out more
//!   positions than `maxRps` in a second or `maxRequests` in a period.
//! - Each position of a block goes to one request, so the `RateLimit` headers count as before.
//! - A claim takes at most an eighth of what is left (and at least one), and no more than the
//!   account's own pace here: about an eighth of a second of its requests. An account that sends a
//!   request now and then claims one position at a time, as if there were no blocks; near a limit
//!   every claim is one position.
//! - The period's positions a process holds and has not used are not spent: reading the usage
//!   subtracts them here, and they go back to the file once they have waited a second
//!   ([`Claims::idle`]) or the store closes. The second's leftovers lapse with their second.
//!
//! What a second process sees: while this one holds unused positions, the other can be refused up
//! to that many requests early (never admitted beyond the limit). That is at most an eighth of
//! the room left when the block was claimed, and none once claims are down to one position.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most positions one claim takes.
pub const MAX_CLAIM: i64 = 256;
/// A claim takes at most this fraction (1/n) of the room left in its window.
pub const ROOM_SHARE: i64 = 8;
/// How long unused period positions are kept before they go back to the file.
pub const KEEP_UNUSED: Duration = Duration::from_secs(1);

/// Positions `next..end` of one window.
#[derive(Debug)]
struct Block {
    next: i64,
    end: i64,
}

/// Positions of one window of one account, in the order they were claimed.
#[derive(Debug, Default)]
struct Held {
    blocks: Vec<Block>,
    /// When the last block was claimed.
    at: Option<Instant>,
}

impl Held {
    /// The next position, when it is within `max` (a plan changed since the claim may have
    /// lowered it: then the file must be asked, and what is held goes back to it first).
    fn take(&mut self, max: i64) -> Option<i64> {
        self.blocks.retain(|b| b.next < b.end);
        let b = self.blocks.first_mut()?;
        let p = b.next;
        if p > max {
            return None;
        }
        b.next += 1;
        Some(p)
    }

    /// Gives up every position held: how many.
    fn surrender(&mut self) -> i64 {
        let n = self.unused();
        self.blocks.clear();
        n
    }

    fn unused(&self) -> i64 {
        self.blocks.iter().map(|b| b.end - b.next).sum()
    }
}

#[derive(Debug, Default)]
struct Account {
    /// The second whose positions `rate` holds.
    second: i64,
    rate: Held,
    /// Period positions, by the period's usage counter key.
    quota: HashMap<String, Held>,
    /// Requests admitted in `second`, and in the second before it: the pace that sizes a claim.
    this_second: i64,
    last_second: i64,
}

impl Account {
    /// Moves on to `second` when it is later than the one held (requests of one second may reach
    /// here after the next one's: they find nothing held, and never set the account back).
    fn at_second(&mut self, second: i64) {
        if second > self.second {
            self.last_second = if second == self.second + 1 {
                self.this_second
            } else {
                0
            };
            self.this_second = 0;
            self.second = second;
            // The old second's positions lapse with it.
            self.rate = Held::default();
        }
    }
}

/// What a request found here: the positions it took, and what it must claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// Its position in the second, when one was held.
    pub rate: Option<i64>,
    /// Its position in the period, when one was held (only taken with a rate position: a request
    /// the second refuses is not counted in the period).
    pub quota: Option<i64>,
    /// How many positions a claim asks for.
    pub want: i64,
}

/// Every account's held positions in this process.
#[derive(Debug, Default)]
pub struct Claims {
    accounts: Mutex<HashMap<String, Account>>,
}

impl Claims {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Account>) -> T) -> T {
        // A panic while holding the lock leaves plain numbers behind: still usable.
        let mut guard = self
            .accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// Runs `f` on the account's state, moved on to `second`. The key is copied only the first
    /// time the account is seen: this runs on every request.
    fn at<T>(&self, account: &str, second: i64, f: impl FnOnce(&mut Account) -> T) -> T {
        self.with(|accounts| {
            if !accounts.contains_key(account) {
                accounts.insert(account.to_owned(), Account::default());
            }
            let a = accounts
                .get_mut(account)
                .expect("the account was inserted above");
            a.at_second(second);
            f(a)
        })
    }

    /// Takes the account's next positions in `second` (under `max_rps`) and in the period counted
    /// at `usage_key` (under `max_requests`), where held.
    pub fn take(
        &self,
        account: &str,
        second: i64,
        max_rps: i64,
        usage_key: &str,
        max_requests: i64,
    ) -> Taken {
        self.at(account, second, |a| {
            let rate = (a.second == second).then(|| a.rate.take(max_rps)).flatten();
            let quota = rate.and_then(|_| {
                a.quota
                    .get_mut(usage_key)
                    .and_then(|held| held.take(max_requests))
            });
            let pace = a.this_second.max(a.last_second);
            Taken {
                rate,
                quota,
                want: (pace / ROOM_SHARE).clamp(1, MAX_CLAIM),
            }
        })
    }

    /// Files what a claim got: the request that claimed takes the first position of each block
    /// (`first..end`), and the rest is held for the requests after it (the second's, while it is
    /// the one held).
    pub fn file(
        &self,
        account: &str,
        second: i64,
        rate: Option<(i64, i64)>,
        usage_key: &str,
        quota: Option<(i64, i64)>,
    ) {
        self.at(account, second, |a| {
            let now = a.second == second;
            if let Some((first, end)) = rate.filter(|&(first, end)| now && first + 1 < end) {
                a.rate.blocks.push(Block {
                    next: first + 1,
                    end,
                });
                a.rate.at = Some(Instant::now());
            }
            if let Some((first, end)) = quota.filter(|&(first, end)| first + 1 < end) {
                let held = a.quota.entry(usage_key.to_owned()).or_default();
                held.blocks.push(Block {
                    next: first + 1,
                    end,
                });
                held.at = Some(Instant::now());
            }
        });
    }

    /// Gives up the positions held in `second` (a claim there adds them back to the room first):
    /// how many.
    pub fn surrender_rate(&self, account: &str, second: i64) -> i64 {
        self.with(|accounts| {
            accounts
                .get_mut(account)
                .filter(|a| a.second == second)
                .map_or(0, |a| a.rate.surrender())
        })
    }

    /// Gives up the period positions held at `usage_key`: how many.
    pub fn surrender_quota(&self, account: &str, usage_key: &str) -> i64 {
        self.with(|accounts| {
            accounts
                .get_mut(account)
                .and_then(|a| a.quota.get_mut(usage_key))
                .map_or(0, Held::surrender)
        })
    }

    /// Counts one admitted request towards the account's pace.
    pub fn admitted(&self, account: &str, second: i64) {
        self.at(account, second, |a| {
            if a.second == second {
                a.this_second += 1;
            }
        });
    }

    /// Period positions held here and not used: claimed in the file, not spent.
    pub fn unused(&self, account: &str, usage_key: &str) -> i64 {
        self.with(|accounts| {
            accounts
                .get(account)
                .and_then(|a| a.quota.get(usage_key))
                .map_or(0, Held::unused)
        })
    }

    /// Whether positions of `second` or of the period at `usage_key` are held for the account: a
    /// request the file refused may take one of them.
    pub fn holds(&self, account: &str, second: i64, usage_key: &str) -> bool {
        self.with(|accounts| {
            accounts.get(account).is_some_and(|a| {
                (a.second == second && a.rate.unused() > 0)
                    || a.quota.get(usage_key).is_some_and(|q| q.unused() > 0)
            })
        })
    }

    /// Whether [`Claims::idle`] would give up or forget anything now.
    pub fn any_idle(&self, keep: Duration) -> bool {
        let now = Instant::now();
        let old = |at: Option<Instant>| at.is_none_or(|t| now.duration_since(t) >= keep);
        self.with(|accounts| {
            accounts
                .values()
                .any(|a| old(a.rate.at) || a.quota.values().any(|held| old(held.at)))
        })
    }

    /// Gives up the period positions held for longer than `keep` (all of them when `keep` is
    /// zero), as (usage counter key, how many) for the file to take back; forgets idle accounts.
    pub fn idle(&self, keep: Duration) -> Vec<(String, i64)> {
        let now = Instant::now();
        let old = |at: Option<Instant>| at.is_none_or(|t| now.duration_since(t) >= keep);
        self.with(|accounts| {
            let mut back = Vec::new();
            for a in accounts.values_mut() {
                a.quota.retain(|key, held| {
                    if !old(held.at) {
                        return true;
                    }
                    let n = held.unused();
                    if n > 0 {
                        back.push((key.clone(), n));
                    }
                    false
                });
            }
            accounts.retain(|_, a| !a.quota.is_empty() || !old(a.rate.at));
            back
        })
    }
}

/// How many positions a claim takes when `room` are left and `want` are asked for: none when
/// nothing is left, else at least one and at most an eighth of the room.
pub fn claim_size(room: i64, want: i64) -> i64 {
    if room <= 0 {
        0
    } else {
        want.min(room / ROOM_SHARE).clamp(1, room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "ACCOUNT#acc_1";
    const P: &str = "ACCOUNT#acc_1/USAGE#2026-11-01T00:00:00.000Z";
    const MAX: i64 = i64::MAX;

    #[test]
    fn claims_take_an_eighth_of_the_room_and_at_least_one() {
        assert_eq!(claim_size(0, 10), 0);
        assert_eq!(claim_size(-3, 10), 0);
        assert_eq!(claim_size(1, 10), 1);
        assert_eq!(claim_size(7, 10), 1);
        assert_eq!(claim_size(80, 256), 10);
        assert_eq!(claim_size(1_000_000, 256), 256);
        assert_eq!(claim_size(1_000_000, 1), 1);
    }

    #[test]
    fn an_account_with_no_pace_claims_one_at_a_time() {
        let c = Claims::default();
        let t = c.take(A, 10, MAX, P, MAX);
        assert_eq!(
            t,
            Taken {
                rate: None,
                quota: None,
                want: 1
            }
        );
    }

    #[test]
    fn held_positions_are_handed_out_once_each_and_lapse_with_their_second() {
        let c = Claims::default();
        // A claim of 1..=4 in the second and 11..=14 in the period: the claimer took 1 and 11.
        c.file(A, 10, Some((1, 5)), P, Some((11, 15)));
        assert_eq!(c.unused(A, P), 3);
        for n in 2..=4 {
            let t = c.take(A, 10, MAX, P, MAX);
            assert_eq!((t.rate, t.quota), (Some(n), Some(n + 10)));
        }
        assert_eq!(c.take(A, 10, MAX, P, MAX).rate, None);
        c.file(A, 10, Some((5, 7)), P, None);
        // No period position left: the second's position is taken, the period's must be claimed.
        let t = c.take(A, 10, MAX, P, MAX);
        assert_eq!((t.rate, t.quota), (Some(6), None));
        c.file(A, 10, Some((7, 9)), P, None);
        assert_eq!(
            c.take(A, 11, MAX, P, MAX).rate,
            None,
            "a new second holds nothing"
        );
        // A late request of the second before finds nothing, and files nothing for it.
        c.file(A, 11, Some((1, 3)), P, None);
        assert_eq!(c.take(A, 10, MAX, P, MAX).rate, None);
        c.file(A, 10, Some((9, 12)), P, None);
        assert_eq!(c.take(A, 11, MAX, P, MAX).rate, Some(2));
        assert_eq!(c.take(A, 11, MAX, P, MAX).rate, None);
    }

    #[test]
    fn the_pace_sizes_claims() {
        let c = Claims::default();
        for _ in 0..800 {
            c.admitted(A, 10);
        }
        assert_eq!(c.take(A, 10, MAX, P, MAX).want, 100);
        // The next second keeps the last one's pace; a gap forgets it.
        assert_eq!(c.take(A, 11, MAX, P, MAX).want, 100);
        assert_eq!(c.take(A, 13, MAX, P, MAX).want, 1);
        for _ in 0..100_000 {
            c.admitted(A, 13);
        }
        assert_eq!(c.take(A, 13, MAX, P, MAX).want, MAX_CLAIM);
    }

    #[test]
    fn positions_beyond_a_lowered_limit_are_not_handed_out_and_can_be_surrendered() {
        let c = Claims::default();
        c.file(A, 10, Some((1, 9)), P, Some((1, 9)));
        let t = c.take(A, 10, 5, P, 3);
        assert_eq!((t.rate, t.quota), (Some(2), Some(2)));
        let t = c.take(A, 10, 5, P, 2);
        assert_eq!((t.rate, t.quota), (Some(3), None));
        assert_eq!(c.take(A, 10, 3, P, 2).rate, None);
        assert_eq!(c.surrender_rate(A, 11), 0, "another second holds nothing");
        assert_eq!(c.surrender_rate(A, 10), 5);
        assert_eq!(c.surrender_quota(A, P), 6);
        assert_eq!(c.unused(A, P), 0);
        assert_eq!(c.take(A, 10, MAX, P, MAX).rate, None);
    }

    #[test]
    fn idle_period_positions_go_back_and_used_ones_stay_spent() {
        let c = Claims::default();
        c.file(A, 10, None, P, Some((1, 11)));
        c.file(A, 10, Some((1, 3)), P, None);
        assert_eq!(c.take(A, 10, MAX, P, MAX).quota, Some(2));
        assert_eq!(c.idle(Duration::from_secs(3600)), vec![]);
        assert_eq!(c.unused(A, P), 8);
        assert_eq!(c.idle(Duration::ZERO), vec![(P.to_owned(), 8)]);
        assert_eq!(c.unused(A, P), 0);
        assert_eq!(c.idle(Duration::ZERO), vec![]);
    }
}
