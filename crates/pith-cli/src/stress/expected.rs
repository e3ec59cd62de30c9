//! The expected state: per key, the last acknowledged version and the
//! version a write in flight will leave, in memory and in a file beside
//! the database so it outlives a killed process.
//!
//! File layout (little-endian), `HEADER_BYTES` then one 8-byte slot per
//! key:
//!
//! ```text
//! 0  magic "PITHSTRS"      8
//! 8  format version u32    (1)
//! 12 keys u32
//! 16 value_bytes u32
//! 20 threads u32           owners of the writes in flight: key i is thread i % threads's
//! 24 salt u64
//! 32 checksum u64          FNV-1a over bytes 0..32
//! 40 zero                  to 64
//! slot i at 64 + 8 i: pending u32 | acked u32
//! ```
//!
//! Invariants: `acked <= pending` for every key; they differ only while
//! the key's owner has a write of it in flight (or was killed during one).
//! Only the owner thread changes a key's slot, and it writes `pending`
//! before the database write and `acked` after it, each with one `pwrite`
//! (no fsync: the process is killed, the machine is not, so the page cache
//! keeps every completed `pwrite`).
//!
//! Thread safety: [`Expected`] is `Sync`; the in-memory versions are
//! atomics (`pending` stored with release before the write, `acked` after,
//! so a reader that loads `acked`, reads the database, then loads `pending`
//! brackets every version it may see). `pwrite`s of distinct slots do not
//! interfere.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::CliError;

const MAGIC: &[u8; 8] = b"PITHSTRS";
const FORMAT_VERSION: u32 = 1;
const HEADER_BYTES: u64 = 64;
const SLOT_BYTES: u64 = 8;

/// The fixed facts of an expected-state file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Size of the key space.
    pub keys: u32,
    /// Mean value length the values were generated with.
    pub value_bytes: u32,
    /// Writer threads of the run that last wrote (key `i` is thread
    /// `i % threads`'s).
    pub threads: u32,
    /// Salt of the value model.
    pub salt: u64,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut b = [0u8; HEADER_BYTES as usize];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.keys.to_le_bytes());
        b[16..20].copy_from_slice(&self.value_bytes.to_le_bytes());
        b[20..24].copy_from_slice(&self.threads.to_le_bytes());
        b[24..32].copy_from_slice(&self.salt.to_le_bytes());
        let sum = fnv1a(&b[0..32]);
        b[32..40].copy_from_slice(&sum.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Header, String> {
        let u32_at = |at: usize| {
            b.get(at..at + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        };
        let u64_at = |at: usize| {
            b.get(at..at + 8).map(|s| {
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                u64::from_le_bytes(a)
            })
        };
        if b.get(0..8) != Some(&MAGIC[..]) {
            return Err("not a stress expected-state file (bad magic)".into());
        }
        match u32_at(8) {
            Some(FORMAT_VERSION) => {}
            other => {
                return Err(format!(
                    "format version {other:?}, this build reads {FORMAT_VERSION}"
                ))
            }
        }
        let (Some(keys), Some(value_bytes), Some(threads), Some(salt), Some(sum)) =
            (u32_at(12), u32_at(16), u32_at(20), u64_at(24), u64_at(32))
        else {
            return Err("header is truncated".into());
        };
        if b.get(0..32).map(fnv1a) != Some(sum) {
            return Err("header checksum mismatch".into());
        }
        Ok(Header {
            keys,
            value_bytes,
            threads,
            salt,
        })
    }
}

/// The expected state of every key, shared by the worker threads.
pub struct Expected {
    path: PathBuf,
    file: File,
    header: Header,
    pending: Vec<AtomicU32>,
    acked: Vec<AtomicU32>,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Expected {
    /// Where the expected state of the database in `db` lives: a sibling
    /// file `<db>.expected` (never inside the database directory).
    pub fn path_for(db: &Path) -> Result<PathBuf, CliError> {
        let name = db.file_name().ok_or_else(|| {
            CliError::Usage(format!("--db {}: needs a directory name", db.display()))
        })?;
        let mut name = name.to_os_string();
        name.push(".expected");
        Ok(db.with_file_name(name))
    }

    /// Creates a fresh file at `path` for `header`, every key never written.
    pub fn create(path: &Path, header: Header) -> Result<Expected, CliError> {
        let tmp = path.with_extension("expected.tmp");
        let mut bytes = header.encode().to_vec();
        bytes.resize(
            (HEADER_BYTES + SLOT_BYTES * u64::from(header.keys)) as usize,
            0,
        );
        std::fs::write(&tmp, &bytes).map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io_err(path))?;
        Self::open(path)
    }

    /// Opens the file at `path`, validating it.
    pub fn open(path: &Path) -> Result<Expected, CliError> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        let bad = |detail: String| CliError::StressState {
            path: path.to_path_buf(),
            detail: format!("{detail}; remove it together with the database to start afresh"),
        };
        let header = Header::decode(&bytes).map_err(bad)?;
        let want = HEADER_BYTES + SLOT_BYTES * u64::from(header.keys);
        if bytes.len() as u64 != want {
            return Err(bad(format!(
                "{} bytes, expected {want} for {} keys",
                bytes.len(),
                header.keys
            )));
        }
        let slots = bytes.get(HEADER_BYTES as usize..).unwrap_or_default();
        let mut pending = Vec::with_capacity(header.keys as usize);
        let mut acked = Vec::with_capacity(header.keys as usize);
        for (i, s) in slots.chunks_exact(SLOT_BYTES as usize).enumerate() {
            let p = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
            let a = u32::from_le_bytes([s[4], s[5], s[6], s[7]]);
            if a > p {
                return Err(bad(format!("key {i}: acked version {a} above pending {p}")));
            }
            pending.push(AtomicU32::new(p));
            acked.push(AtomicU32::new(a));
        }
        let file = File::options()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_err(path))?;
        Ok(Expected {
            path: path.to_path_buf(),
            file,
            header,
            pending,
            acked,
        })
    }

    /// The file's fixed facts.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Records which threads own the writes from now on.
    pub fn set_threads(&mut self, threads: u32) -> Result<(), CliError> {
        self.header.threads = threads;
        self.file
            .write_all_at(&self.header.encode(), 0)
            .map_err(io_err(&self.path))
    }

    /// Last acknowledged version of key `i`.
    pub fn acked(&self, i: u32) -> u32 {
        self.acked
            .get(i as usize)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// Version key `i` is at or is being written to.
    pub fn pending(&self, i: u32) -> u32 {
        self.pending
            .get(i as usize)
            .map_or(0, |p| p.load(Ordering::Acquire))
    }

    fn write_word(&self, i: u32, word: u64, v: u32) -> Result<(), CliError> {
        let at = HEADER_BYTES + SLOT_BYTES * u64::from(i) + word * 4;
        self.file
            .write_all_at(&v.to_le_bytes(), at)
            .map_err(io_err(&self.path))
    }

    /// Announces that version `v` of key `i` is about to be written. Only
    /// key `i`'s owner calls it.
    pub fn begin(&self, i: u32, v: u32) -> Result<(), CliError> {
        if let Some(p) = self.pending.get(i as usize) {
            p.store(v, Ordering::Release);
        }
        self.write_word(i, 0, v)
    }

    /// Records that the write of version `v` of key `i` was acknowledged.
    pub fn ack(&self, i: u32, v: u32) -> Result<(), CliError> {
        if let Some(a) = self.acked.get(i as usize) {
            a.store(v, Ordering::Release);
        }
        self.write_word(i, 1, v)
    }

    /// Sets every key to the version found in the database (pending and
    /// acked alike) and writes all slots at once. No thread may be writing.
    pub fn settle(&self, versions: &[u32]) -> Result<(), CliError> {
        let mut bytes = Vec::with_capacity(versions.len() * SLOT_BYTES as usize);
        for (i, &v) in versions.iter().enumerate() {
            if let (Some(p), Some(a)) = (self.pending.get(i), self.acked.get(i)) {
                p.store(v, Ordering::Release);
                a.store(v, Ordering::Release);
            }
            bytes.extend_from_slice(&v.to_le_bytes());
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        self.file
            .write_all_at(&bytes, HEADER_BYTES)
            .map_err(io_err(&self.path))
    }

    /// Overwrites key `i`'s slot without touching the database: for tests
    /// that check a wrong expectation is caught.
    #[cfg(test)]
    pub fn force(&self, i: u32, pending: u32, acked: u32) -> Result<(), CliError> {
        self.begin(i, pending)?;
        self.ack(i, acked)
    }
}
