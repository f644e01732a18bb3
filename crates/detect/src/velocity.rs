//! Velocity: what the store has counted of a visit's address, device and project over three
//! windows, this visit included. Never part of what a client sends (the field is skipped when
//! evidence is read); the service counts and attaches it before the engine runs, so the engine
//! stays pure.

use std::fmt;

/// The three windows every counter keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    FiveMinutes,
    Hour,
    Day,
}

impl Span {
    pub const ALL: [Span; 3] = [Span::FiveMinutes, Span::Hour, Span::Day];

    pub fn seconds(self) -> i64 {
        match self {
            Span::FiveMinutes => 300,
            Span::Hour => 3_600,
            Span::Day => 86_400,
        }
    }

    fn index(self) -> usize {
        match self {
            Span::FiveMinutes => 0,
            Span::Hour => 1,
            Span::Day => 2,
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Span::FiveMinutes => "5 minutes",
            Span::Hour => "1 hour",
            Span::Day => "24 hours",
        })
    }
}

/// One value per window, in [`Span::ALL`]'s order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerSpan<T>(pub [T; 3]);

impl<T: Copy> PerSpan<T> {
    pub fn at(&self, span: Span) -> T {
        self.0[span.index()]
    }
}

/// An address's counts over one window (IPv6 addresses count by their /64).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddressCounts {
    pub events: u64,
    pub sessions: u64,
    /// Distinct device keys seen from it: many devices behind one address is what a shared
    /// address (carrier-grade NAT, a corporate egress, a relay) looks like.
    pub devices: u64,
}

/// A device key's counts over one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounts {
    pub events: u64,
    pub sessions: u64,
    pub addresses: u64,
    pub countries: u64,
}

/// The counts behind the velocity rules. Absent parts (no address, no device key) are no
/// evidence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Velocity {
    pub address: Option<PerSpan<AddressCounts>>,
    pub device: Option<PerSpan<DeviceCounts>>,
    /// The project's events in each window: the baseline that scales the thresholds.
    pub project_events: PerSpan<u64>,
}
