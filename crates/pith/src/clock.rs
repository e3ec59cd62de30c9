//! The engine's clock, for expiry: the time against which a key's
//! deadline is judged, in milliseconds since the Unix epoch.
//!
//! Reads ask the clock when they start (a point read once, an iterator or
//! a search once when it is created, so one walk judges every key at the
//! same instant); flushes and merges ask it once per build and turn the
//! versions past their deadline into tombstones. No timer runs per key.
//!
//! Invariant the engine relies on: nothing. A clock that goes backwards
//! makes expired keys that no build has dropped yet readable again, and
//! keys a build dropped stay gone; that is the whole effect.
//! [`ManualClock`] lets tests move time by hand.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock ([`SystemTime`]); the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        // A clock set before 1970 reads as the epoch: every deadline is
        // then in the future, which loses nothing.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock moved by hand, for tests; clones share one time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `ms`.
    pub fn new(ms: u64) -> Self {
        ManualClock {
            now: Arc::new(AtomicU64::new(ms)),
        }
    }

    /// Sets the time to `ms`.
    pub fn set(&self, ms: u64) {
        self.now.store(ms, Ordering::SeqCst);
    }

    /// Moves the time `ms` forward.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_after_2020_and_manual_clock_moves_by_hand() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
        let c = ManualClock::new(10);
        let shared = c.clone();
        c.advance(5);
        assert_eq!(shared.now_ms(), 15);
        shared.set(3);
        assert_eq!(c.now_ms(), 3);
    }
}
