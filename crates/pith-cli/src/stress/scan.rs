//! Checking a scan of a key range against the expected state.
//!
//! A scan of indices `lo..hi` is given, per key, the window of versions
//! it may see (`before..=after`: the acknowledged version loaded before
//! the iterator was created and the pending version loaded after; equal
//! for the scanning thread's own keys, so those are exact) or, for a scan
//! through a snapshot already read key by key, the exact outcome. As keys
//! arrive, [`ScanCheck::see`] requires them to be keys of the model, in
//! strictly increasing (forward) or decreasing (backward) order, inside
//! the range, with a value allowed for that key; every key the scan
//! skipped over must be allowed to be absent. [`ScanCheck::finish`] checks
//! the keys after the last one seen.
//!
//! A `ScanCheck` belongs to one thread.

use super::model::{Found, Model};
use super::report::Mismatch;

/// Which way a scan goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Ascending keys.
    Forward,
    /// Descending keys.
    Backward,
}

/// The running check of one scan.
pub struct ScanCheck<'m> {
    model: &'m Model,
    what: &'static str,
    lo: u32,
    hi: u32,
    before: Vec<u32>,
    after: Vec<u32>,
    exact: Option<Vec<Found>>,
    dir: Dir,
    /// Forward: the lowest index not yet accounted for. Backward: one past
    /// the highest index not yet accounted for.
    cursor: u32,
    last: Option<Vec<u8>>,
    /// Keys (present or absent) checked so far.
    pub checked: u64,
}

impl<'m> ScanCheck<'m> {
    /// A check of a scan named `what` over `lo..hi` with version windows
    /// `before[i - lo]..=after[i - lo]`.
    pub fn new(
        model: &'m Model,
        what: &'static str,
        (lo, hi): (u32, u32),
        before: Vec<u32>,
        after: Vec<u32>,
        dir: Dir,
    ) -> Self {
        ScanCheck {
            model,
            what,
            lo,
            hi,
            before,
            after,
            exact: None,
            dir,
            cursor: if dir == Dir::Forward { lo } else { hi },
            last: None,
            checked: 0,
        }
    }

    /// Requires exactly these outcomes (one per key of the range) instead
    /// of the version windows.
    pub fn exact(mut self, found: Vec<Found>) -> Self {
        self.exact = Some(found);
        self
    }

    fn fail(&self, key: &[u8], expected: String, found: String) -> Mismatch {
        Mismatch {
            key: String::from_utf8_lossy(key).into_owned(),
            check: self.what.to_string(),
            expected,
            found,
        }
    }

    fn expected_text(&self, i: u32) -> String {
        let k = (i - self.lo) as usize;
        match self.exact.as_ref().and_then(|e| e.get(k)) {
            Some(Found::Absent) => "absent, as an earlier read through this snapshot found".into(),
            Some(Found::Version(v)) => {
                format!("version {v}, as an earlier read through this snapshot found")
            }
            None => self.model.describe_expected(
                i,
                self.before.get(k).copied().unwrap_or(0),
                self.after.get(k).copied().unwrap_or(0),
            ),
        }
    }

    /// The scan's direction.
    pub fn dir(&self) -> Dir {
        self.dir
    }

    /// Checks that key `i` may be found as `found`.
    fn check(&mut self, i: u32, found: Found, key: &[u8], text: String) -> Result<(), Mismatch> {
        self.checked += 1;
        let k = (i - self.lo) as usize;
        let ok = match self.exact.as_ref().and_then(|e| e.get(k)) {
            Some(&want) => want == found,
            None => self.model.allowed(
                i,
                self.before.get(k).copied().unwrap_or(0),
                self.after.get(k).copied().unwrap_or(0),
                found,
            ),
        };
        if ok {
            Ok(())
        } else {
            Err(self.fail(key, self.expected_text(i), text))
        }
    }

    fn absent(&mut self, from: u32, to: u32) -> Result<(), Mismatch> {
        for j in from..to {
            let key = self.model.key(j);
            self.check(
                j,
                Found::Absent,
                &key,
                "absent (the scan skipped it)".into(),
            )?;
        }
        Ok(())
    }

    /// Accounts for one `(key, value)` the scan returned.
    pub fn see(&mut self, key: &[u8], value: &[u8]) -> Result<(), Mismatch> {
        let Some(i) = self.model.index_of(key) else {
            return Err(self.fail(
                key,
                "only keys the stress test writes".into(),
                format!("an unknown key ({} value bytes)", value.len()),
            ));
        };
        let in_order = match self.dir {
            Dir::Forward => i >= self.cursor && i < self.hi,
            Dir::Backward => i < self.cursor && i >= self.lo,
        };
        if !in_order {
            let after = self.last.as_deref().map_or_else(
                || "the start of the scan".to_string(),
                |l| String::from_utf8_lossy(l).into_owned(),
            );
            return Err(self.fail(
                key,
                format!(
                    "keys of indices {}..{} in {:?} order",
                    self.lo, self.hi, self.dir
                ),
                format!("it after {after}"),
            ));
        }
        match self.dir {
            Dir::Forward => self.absent(self.cursor, i)?,
            Dir::Backward => self.absent(i + 1, self.cursor)?,
        }
        match self.model.decode(i, value) {
            Ok(v) => self.check(i, Found::Version(v), key, format!("version {v}"))?,
            Err(text) => {
                self.checked += 1;
                return Err(self.fail(key, self.expected_text(i), text));
            }
        }
        self.cursor = if self.dir == Dir::Forward { i + 1 } else { i };
        self.last = Some(key.to_vec());
        Ok(())
    }

    /// Checks the keys after the last one seen: the scan ended.
    pub fn finish(&mut self) -> Result<(), Mismatch> {
        match self.dir {
            Dir::Forward => self.absent(self.cursor, self.hi),
            Dir::Backward => self.absent(self.lo, self.cursor),
        }
    }
}
