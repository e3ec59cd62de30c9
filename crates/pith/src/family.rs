//! Column families: named key spaces in one database.
//!
//! A [`ColumnFamily`] is a handle naming one: its id (what the log and the
//! manifest store) and its name. Each family has its own memtables,
//! segments, merges and shared compression models; they share the log
//! (so a [`crate::WriteBatch`] across families is atomic), the sequence
//! numbers (so one [`crate::Snapshot`] reads them all at one point) and
//! the manifest. Ids are never reused, so a handle of a dropped family
//! can never reach a family created later under the same name: using it
//! is [`crate::Error::NoSuchFamily`].

use std::sync::Arc;

/// The default family's id: what the methods without `_cf` use.
pub(crate) const DEFAULT: u32 = 0;

/// A handle to one column family of a database (RocksDB's
/// `ColumnFamilyHandle`): cheap to clone, valid until the family is
/// dropped. From [`crate::DB::create_family`], [`crate::DB::family`] or
/// [`crate::DB::families`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ColumnFamily {
    pub(crate) id: u32,
    pub(crate) name: Arc<str>,
}

impl ColumnFamily {
    pub(crate) fn new(id: u32, name: Arc<str>) -> Self {
        ColumnFamily { id, name }
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The family's id: 0 for the default family; never reused in one
    /// database.
    pub fn id(&self) -> u32 {
        self.id
    }
}
