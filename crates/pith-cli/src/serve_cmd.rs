//! `pith serve`: the Redis-protocol server (`pith-server`) on a database.
//!
//! Settings come from defaults, then `--config FILE` (redis.conf style),
//! then the flags, each named as its redis.conf setting.

use std::path::PathBuf;

use pith_server::Config;

use crate::CliError;

/// `pith serve`.
#[derive(clap::Args)]
#[command(after_help = "\
Speaks RESP2 and RESP3 (HELLO 3); any Redis client connects unchanged. Stops cleanly on \
SHUTDOWN, SIGTERM or Ctrl-C. A bind address other than loopback needs --requirepass \
(protected mode). TLS: --tls-port with --tls-cert-file and --tls-key-file (PEM) adds a \
listener that speaks TLS (clients: redis-cli --tls --cacert ...). docs/server.md has the \
commands and every difference from Redis.")]
pub struct ServeArgs {
    /// Database directory (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// A Redis-style config file (`name value` per line), read before the flags.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Addresses to listen on, space separated (default 127.0.0.1).
    #[arg(long)]
    bind: Option<String>,
    /// TCP port (default 6379; 0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
    /// Password clients must AUTH with.
    #[arg(long)]
    requirepass: Option<String>,
    /// always (fsync before each reply), everysec (default), no.
    #[arg(long)]
    appendfsync: Option<String>,
    /// Most connected clients (default 10000).
    #[arg(long)]
    maxclients: Option<String>,
    /// Seconds before an idle client is closed (default 0: never).
    #[arg(long)]
    timeout: Option<String>,
    /// Longest bulk string in a request (default 512mb).
    #[arg(long = "proto-max-bulk-len")]
    proto_max_bulk_len: Option<String>,
    /// Most unparsed request bytes per client (default 1gb).
    #[arg(long = "client-query-buffer-limit")]
    client_query_buffer_limit: Option<String>,
    /// Memory for recent writes before a flush to a segment (default 64mb).
    #[arg(long = "pith-memtable-size")]
    pith_memtable_size: Option<String>,
    /// Memory budget of a segment build (default 0: the engine's defaults).
    #[arg(long = "pith-build-memory")]
    pith_build_memory: Option<String>,
    /// Most malloc arenas (default 0: glibc's; 1 under a tight memory limit).
    #[arg(long = "pith-malloc-arenas")]
    pith_malloc_arenas: Option<String>,
    /// How much lower the flush and merge threads' CPU priority is than
    /// the serving threads', a nice increment 0-19 (default 10).
    #[arg(long = "pith-background-nice")]
    pith_background_nice: Option<String>,
    /// How point reads read stored values: mapped (default) or pread (for
    /// data larger than the memory).
    #[arg(long = "pith-value-reads")]
    pith_value_reads: Option<String>,
    /// Threads that serve connections (default 1; see docs/server.md).
    #[arg(long = "io-threads")]
    io_threads: Option<String>,
    /// A port for TLS connections, beside the plain one (default 0: none).
    #[arg(long = "tls-port")]
    tls_port: Option<u16>,
    /// The server's certificate chain (PEM), for --tls-port.
    #[arg(long = "tls-cert-file")]
    tls_cert_file: Option<String>,
    /// The certificate's private key (PEM), for --tls-port.
    #[arg(long = "tls-key-file")]
    tls_key_file: Option<String>,
}

/// `pith serve`.
pub fn serve(args: &ServeArgs) -> Result<(), CliError> {
    let mut config = Config::default();
    if let Some(path) = &args.config {
        config.read_file(path).map_err(CliError::Usage)?;
    }
    let port = args.port.map(|p| p.to_string());
    let tls_port = args.tls_port.map(|p| p.to_string());
    for (name, value) in [
        ("bind", &args.bind),
        ("port", &port),
        ("requirepass", &args.requirepass),
        ("appendfsync", &args.appendfsync),
        ("maxclients", &args.maxclients),
        ("timeout", &args.timeout),
        ("proto-max-bulk-len", &args.proto_max_bulk_len),
        ("client-query-buffer-limit", &args.client_query_buffer_limit),
        ("pith-memtable-size", &args.pith_memtable_size),
        ("pith-build-memory", &args.pith_build_memory),
        ("pith-malloc-arenas", &args.pith_malloc_arenas),
        ("pith-background-nice", &args.pith_background_nice),
        ("pith-value-reads", &args.pith_value_reads),
        ("io-threads", &args.io_threads),
        ("tls-port", &tls_port),
        ("tls-cert-file", &args.tls_cert_file),
        ("tls-key-file", &args.tls_key_file),
    ] {
        if let Some(v) = value {
            config
                .set(name, v)
                .map_err(|e| CliError::Usage(format!("--{name}: {e}")))?;
        }
    }
    std::fs::create_dir_all(&args.db).map_err(|source| CliError::Io {
        path: args.db.clone(),
        source,
    })?;
    pith_server::serve_blocking(&args.db, config).map_err(|e| CliError::Usage(e.to_string()))
}
