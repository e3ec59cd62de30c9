//! Server settings, named as in `redis.conf`: from defaults, a Redis-style
//! config file (`name value` per line, `#` comments, quotes as in inline
//! commands), `pith serve` flags, and CONFIG SET at run time. One setter,
//! [`Config::set`], parses every source the same way.

use std::path::{Path, PathBuf};

/// When an acknowledged write is on disk (`appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appendfsync {
    /// Each write is acknowledged after the log is fsynced.
    Always,
    /// The log is fsynced once a second: a power cut may lose the last
    /// second; a process crash loses nothing.
    Everysec,
    /// The operating system decides when the log reaches the disk.
    No,
}

impl Appendfsync {
    /// The engine's write options for this policy (`everysec` also needs
    /// the server's once-a-second sync). Unless every write is synced, a
    /// write's log record is deferred: the connection writes the log
    /// (every client's records since the last write, in one system call)
    /// before it sends the reply; see `conn.rs`.
    pub fn write_options(self) -> pith::WriteOptions {
        let sync = self == Appendfsync::Always;
        pith::WriteOptions {
            sync,
            defer_log: !sync,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Appendfsync::Always => "always",
            Appendfsync::Everysec => "everysec",
            Appendfsync::No => "no",
        }
    }
}

/// Every setting.
#[derive(Clone, Debug)]
pub struct Config {
    /// Addresses to listen on (`bind`), space separated in files.
    pub bind: Vec<String>,
    /// TCP port (`port`).
    pub port: u16,
    /// Password AUTH must give before any other command (`requirepass`).
    pub requirepass: Option<String>,
    /// Log sync policy (`appendfsync`).
    pub appendfsync: Appendfsync,
    /// Most connected clients (`maxclients`).
    pub maxclients: usize,
    /// Longest bulk string of a request (`proto-max-bulk-len`).
    pub proto_max_bulk_len: usize,
    /// Most bytes of unparsed request a client may hold
    /// (`client-query-buffer-limit`).
    pub client_query_buffer_limit: usize,
    /// Seconds of idleness after which a client is closed; 0 never
    /// (`timeout`).
    pub timeout: u64,
    /// Most commands a MULTI may queue (`pith-multi-max-commands`; Redis
    /// bounds it only by memory).
    pub multi_max_commands: usize,
    /// The engine's memtable size (`pith-memtable-size`): memory held by
    /// recent writes before a flush writes them to a segment.
    pub memtable_bytes: usize,
    /// The engine's memory budget for a segment build
    /// (`pith-build-memory`; 0: the engine's defaults).
    pub build_memory_bytes: usize,
    /// Most glibc malloc arenas (`pith-malloc-arenas`; 0: glibc's default,
    /// eight per core). Fewer waste less memory to fragmentation and cost
    /// throughput (see `memory.rs`).
    pub malloc_arenas: usize,
    /// How much lower the engine's flush and merge threads run than the
    /// threads serving connections, as a nice increment
    /// (`pith-background-nice`, 0-19; default 10): the serving threads
    /// run first when the cores are busy, and encoding takes what is left.
    pub background_nice: u8,
    /// How the engine's point reads read stored values
    /// (`pith-value-reads`, `mapped` or `pread`; default `mapped`):
    /// `pread` when the data is larger than the memory
    /// (`pith::ValueReads`).
    pub value_reads: pith::ValueReads,
    /// Threads that serve connections (`io-threads`, as in Redis; 1-128;
    /// default 1, as in Redis). With one, the log records of the writes of
    /// every connection served in a turn go to the log in one system call
    /// (`Server::gather_log_writes`). On this project's 2-core test
    /// machine, with redis-benchmark beside the server (3 rounds each,
    /// `scripts/bench-serve.py`), one thread against two served SET at
    /// `-P 1` 16% faster, GET 20%, INCR 39%, INCR at `-P 16` 9%, SET at
    /// `-P 16` 3% slower, with p99 latencies of SET and INCR 0.5-0.75x two
    /// threads'; reads that decode many values lost (GET at `-P 16` 47%,
    /// MGET 41-44%), so a read-heavy pipelined load on a machine with
    /// cores to spare wants more.
    pub io_threads: usize,
    /// TLS port (`tls-port`); 0: no TLS listener.
    pub tls_port: u16,
    /// The server's certificate chain, PEM (`tls-cert-file`).
    pub tls_cert_file: Option<PathBuf>,
    /// The certificate's private key, PEM (`tls-key-file`).
    pub tls_key_file: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: vec!["127.0.0.1".into()],
            port: 6379,
            requirepass: None,
            appendfsync: Appendfsync::Everysec,
            maxclients: 10_000,
            proto_max_bulk_len: 512 << 20,
            client_query_buffer_limit: 1 << 30,
            timeout: 0,
            multi_max_commands: 100_000,
            memtable_bytes: 64 << 20,
            build_memory_bytes: 0,
            malloc_arenas: 0,
            background_nice: 10,
            value_reads: pith::ValueReads::Mapped,
            io_threads: 1,
            tls_port: 0,
            tls_cert_file: None,
            tls_key_file: None,
        }
    }
}

/// Names CONFIG GET lists, in this order.
pub const NAMES: &[&str] = &[
    "bind",
    "port",
    "requirepass",
    "appendfsync",
    "maxclients",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "timeout",
    "pith-multi-max-commands",
    "pith-memtable-size",
    "pith-build-memory",
    "pith-malloc-arenas",
    "pith-background-nice",
    "pith-value-reads",
    "io-threads",
    "save",
    "appendonly",
    "tls-port",
    "tls-cert-file",
    "tls-key-file",
];

/// Settings that cannot change while the server runs.
const AT_START_ONLY: &[&str] = &[
    "bind",
    "port",
    "tls-port",
    "tls-cert-file",
    "tls-key-file",
    "pith-memtable-size",
    "pith-build-memory",
    "pith-malloc-arenas",
    "pith-background-nice",
    "pith-value-reads",
    "io-threads",
];

fn memory(value: &str) -> Result<usize, String> {
    let v = value.to_ascii_lowercase();
    let (digits, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v.as_str(), ""),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("'{value}' is not a size"))?;
    let scale: usize = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1 << 20,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1 << 30,
        _ => return Err(format!("'{value}' has an unknown unit")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("'{value}' is too large"))
}

/// A path setting as CONFIG GET shows it (empty when unset).
fn path_text(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

impl Config {
    /// The engine options these settings choose.
    pub fn engine_options(&self) -> pith::Options {
        pith::Options {
            memtable_bytes: self.memtable_bytes,
            build_memory_bytes: (self.build_memory_bytes > 0).then_some(self.build_memory_bytes),
            background_nice: self.background_nice,
            value_reads: self.value_reads,
            ..pith::Options::default()
        }
    }

    /// Sets `name` (as in redis.conf, any case) from `value`.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("'{v}' is not a number"))
        };
        match name.to_ascii_lowercase().as_str() {
            "bind" => {
                let addrs: Vec<String> = value.split_whitespace().map(String::from).collect();
                if addrs.is_empty() {
                    return Err("bind needs at least one address".into());
                }
                self.bind = addrs;
            }
            "port" => {
                self.port = u16::try_from(number(value)?)
                    .map_err(|_| format!("port {value} is out of range"))?
            }
            "tls-port" => {
                self.tls_port = u16::try_from(number(value)?)
                    .map_err(|_| format!("tls-port {value} is out of range"))?
            }
            "tls-cert-file" => self.tls_cert_file = (!value.is_empty()).then(|| value.into()),
            "tls-key-file" => self.tls_key_file = (!value.is_empty()).then(|| value.into()),
            "requirepass" => self.requirepass = (!value.is_empty()).then(|| value.to_string()),
            "appendfsync" => {
                self.appendfsync = match value.to_ascii_lowercase().as_str() {
                    "always" => Appendfsync::Always,
                    "everysec" => Appendfsync::Everysec,
                    "no" => Appendfsync::No,
                    _ => {
                        return Err(format!(
                            "appendfsync must be always, everysec or no, not '{value}'"
                        ))
                    }
                }
            }
            "maxclients" => self.maxclients = number(value)?.max(1) as usize,
            "proto-max-bulk-len" => self.proto_max_bulk_len = memory(value)?.max(1024),
            "client-query-buffer-limit" => {
                self.client_query_buffer_limit = memory(value)?.max(1 << 20)
            }
            "timeout" => self.timeout = number(value)?,
            "pith-multi-max-commands" => self.multi_max_commands = number(value)?.max(1) as usize,
            "pith-memtable-size" => self.memtable_bytes = memory(value)?.max(64 << 10),
            "pith-build-memory" => self.build_memory_bytes = memory(value)?,
            "pith-malloc-arenas" => self.malloc_arenas = number(value)? as usize,
            "pith-background-nice" => match number(value)? {
                n @ 0..=19 => self.background_nice = n as u8,
                n => return Err(format!("pith-background-nice is {n}; it must be 0-19")),
            },
            "pith-value-reads" => {
                self.value_reads = pith::ValueReads::from_name(&value.to_ascii_lowercase())
                    .ok_or_else(|| {
                        format!("pith-value-reads is '{value}'; it must be mapped or pread")
                    })?
            }
            "io-threads" => match number(value)? {
                n @ 1..=128 => self.io_threads = n as usize,
                n => return Err(format!("io-threads must be 1 to 128, not {n}")),
            },
            // Read by clients (redis-benchmark asks), fixed here: every
            // write goes to the log, and there are no snapshots.
            "save" | "appendonly" => {
                return Err(format!(
                    "'{name}' is fixed in PithDB (every write goes to its log; appendfsync says when it is synced)"
                ))
            }
            other => return Err(format!("unknown setting '{other}'")),
        }
        Ok(())
    }

    /// Sets at run time (CONFIG SET): settings fixed at start refuse.
    pub fn set_live(&mut self, name: &str, value: &str) -> Result<(), String> {
        if AT_START_ONLY.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(format!("'{name}' can only be set at start"));
        }
        self.set(name, value)
    }

    /// The value of `name` as CONFIG GET shows it.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "bind" => self.bind.join(" "),
            "port" => self.port.to_string(),
            "requirepass" => self.requirepass.clone().unwrap_or_default(),
            "appendfsync" => self.appendfsync.name().into(),
            "maxclients" => self.maxclients.to_string(),
            "proto-max-bulk-len" => self.proto_max_bulk_len.to_string(),
            "client-query-buffer-limit" => self.client_query_buffer_limit.to_string(),
            "timeout" => self.timeout.to_string(),
            "pith-multi-max-commands" => self.multi_max_commands.to_string(),
            "pith-memtable-size" => self.memtable_bytes.to_string(),
            "pith-build-memory" => self.build_memory_bytes.to_string(),
            "pith-malloc-arenas" => self.malloc_arenas.to_string(),
            "pith-background-nice" => self.background_nice.to_string(),
            "pith-value-reads" => self.value_reads.name().into(),
            "io-threads" => self.io_threads.to_string(),
            "save" => String::new(),
            "appendonly" => "yes".into(),
            "tls-port" => self.tls_port.to_string(),
            "tls-cert-file" => path_text(&self.tls_cert_file),
            "tls-key-file" => path_text(&self.tls_key_file),
            _ => return None,
        })
    }

    /// Reads a Redis-style config file over these settings; an error names
    /// the file and line.
    pub fn read_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let at = |e: String| format!("{}:{}: {e}", path.display(), i + 1);
            let words = crate::resp::split_args(line.trim().as_bytes())
                .ok_or_else(|| at("unbalanced quotes".into()))?;
            let Some((name, values)) = words.split_first() else {
                continue;
            };
            if name.first() == Some(&b'#') {
                continue;
            }
            let name = String::from_utf8_lossy(name);
            let value: Vec<String> = values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            self.set(&name, &value.join(" ")).map_err(at)?;
        }
        Ok(())
    }

    /// True when every bind address is a loopback address.
    pub fn loopback_only(&self) -> bool {
        self.bind.iter().all(|a| {
            a == "localhost"
                || a.trim_start_matches('-')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_sets_what_flags_set() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pith.conf");
        std::fs::write(&path, "# comment\nport 7000\nrequirepass \"s3 cret\"\nappendfsync always\nproto-max-bulk-len 1mb\n\n").expect("write");
        let mut c = Config::default();
        c.read_file(&path).expect("read");
        assert_eq!((c.port, c.requirepass.as_deref()), (7000, Some("s3 cret")));
        assert_eq!(c.appendfsync, Appendfsync::Always);
        assert_eq!(c.proto_max_bulk_len, 1 << 20);
        std::fs::write(&path, "port 7000\nbogus 1\n").expect("write");
        let e = c.read_file(&path).expect_err("unknown setting");
        assert!(e.ends_with(":2: unknown setting 'bogus'"), "{e}");
    }

    #[test]
    fn io_threads_are_bounded_and_fixed_at_start() {
        let mut c = Config::default();
        assert_eq!(c.io_threads, 1);
        c.set("io-threads", "3").expect("3");
        assert_eq!(c.get("io-threads").as_deref(), Some("3"));
        for bad in ["0", "129", "x"] {
            assert!(c.set("io-threads", bad).is_err(), "{bad}");
        }
        assert_eq!(c.io_threads, 3);
        assert!(c.set_live("io-threads", "2").is_err());
    }

    #[test]
    fn value_reads_reach_the_engine() {
        let mut c = Config::default();
        assert_eq!(c.engine_options().value_reads, pith::ValueReads::Mapped);
        assert_eq!(c.get("pith-value-reads").as_deref(), Some("mapped"));
        c.set("pith-value-reads", "PREAD").expect("pread");
        assert_eq!(c.engine_options().value_reads, pith::ValueReads::Pread);
        assert_eq!(c.get("pith-value-reads").as_deref(), Some("pread"));
        let e = c.set("pith-value-reads", "mmap").expect_err("mmap");
        assert!(e.contains("mapped or pread"), "{e}");
        assert_eq!(c.engine_options().value_reads, pith::ValueReads::Pread);
        assert!(
            c.set_live("pith-value-reads", "mapped").is_err(),
            "fixed at start"
        );
    }

    #[test]
    fn background_nice_reaches_the_engine_within_bounds() {
        let mut c = Config::default();
        assert_eq!(c.engine_options().background_nice, 10);
        c.set("pith-background-nice", "0").expect("0");
        assert_eq!(c.engine_options().background_nice, 0);
        for bad in ["20", "-1", "x"] {
            assert!(c.set("pith-background-nice", bad).is_err(), "{bad}");
        }
        assert_eq!(c.get("pith-background-nice").as_deref(), Some("0"));
        assert!(
            c.set_live("pith-background-nice", "5").is_err(),
            "fixed at start"
        );
    }

    #[test]
    fn loopback_is_told_apart() {
        let mut c = Config::default();
        assert!(c.loopback_only());
        c.set("bind", "127.0.0.1 ::1").expect("bind");
        assert!(c.loopback_only());
        c.set("bind", "0.0.0.0").expect("bind");
        assert!(!c.loopback_only());
        assert!(c.set_live("port", "1").is_err());
    }
}
