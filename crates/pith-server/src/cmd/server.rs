//! Server commands: PING, ECHO, INFO, CONFIG, CLIENT, COMMAND, SAVE and
//! BGSAVE (a flush of the memtable), and PithDB's PITH.STATS.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::{engine, syntax, CmdResult, Ctx, COMMANDS};
use crate::resp::Reply;
use crate::store::lock;

pub fn ping(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let _ = ctx;
    match args {
        [_] => Ok(Reply::Simple("PONG")),
        [_, msg] => Ok(Reply::Bulk(msg.clone())),
        _ => Err(super::wrong_arity("ping")),
    }
}

pub fn echo(_ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Bulk(args[1].clone()))
}

pub fn save(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    ctx.server.store.db().flush().map_err(engine)?;
    Ok(match args[0].eq_ignore_ascii_case(b"bgsave") {
        true => Reply::Simple("Background saving started"),
        false => Reply::Simple("OK"),
    })
}

/// A Redis glob over a setting name (CONFIG GET).
fn name_matches(glob: &[u8], name: &str) -> bool {
    let re = crate::glob::to_regex(&glob.to_ascii_lowercase());
    pith_trie::KeyRegex::new(&re).is_ok_and(|r| r.is_match(name.as_bytes()))
}

pub fn config(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), &args[2..]) {
        (b"GET", globs) if !globs.is_empty() => {
            let config = lock(&ctx.server.config);
            let mut pairs = Vec::new();
            for name in crate::config::NAMES {
                if globs.iter().any(|g| name_matches(g, name)) {
                    let value = config.get(name).unwrap_or_default();
                    pairs.push((Reply::bulk(*name), Reply::bulk(value)));
                }
            }
            Ok(Reply::Map(pairs))
        }
        (b"SET", kv) if !kv.is_empty() && kv.len() % 2 == 0 => {
            let mut config = lock(&ctx.server.config);
            let mut next = config.clone();
            for pair in kv.chunks(2) {
                let (name, value) = (
                    String::from_utf8_lossy(&pair[0]),
                    String::from_utf8_lossy(&pair[1]),
                );
                next.set_live(&name, &value).map_err(|e| {
                    Reply::err(format_args!(
                        "CONFIG SET failed (possibly related to argument '{name}') - {e}"
                    ))
                })?;
            }
            ctx.server
                .store
                .set_write_options(next.appendfsync.write_options());
            *config = next;
            Ok(Reply::Simple("OK"))
        }
        (b"RESETSTAT", []) => {
            let s = &ctx.server.stats;
            for c in [
                &s.commands,
                &s.connections,
                &s.rejected,
                &s.net_in,
                &s.net_out,
            ] {
                c.store(0, Ordering::Relaxed);
            }
            Ok(Reply::Simple("OK"))
        }
        (b"REWRITE", []) => Err(Reply::err("The server is running without a config file")),
        _ => Err(Reply::err(format_args!(
            "unknown subcommand '{}'. Try CONFIG HELP.",
            super::printable(&args[1])
        ))),
    }
}

fn client_line(c: &crate::server::ClientEntry, me: u64) -> String {
    let shown = lock(&c.info);
    let text = |b: &Option<Vec<u8>>| {
        b.as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default()
            .into_owned()
    };
    format!(
        "id={} addr={} laddr= fd=0 name={} age={} idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}{}",
        c.id,
        c.addr,
        text(&shown.name),
        c.since.elapsed().as_secs(),
        if c.id == me { "client|list" } else { shown.last },
        shown.proto,
        text(&shown.lib_name),
        text(&shown.lib_ver),
        "\n"
    )
}

pub fn client(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let sub = args[1].to_ascii_uppercase();
    let me = ctx.session.id;
    match (sub.as_slice(), &args[2..]) {
        (b"ID", []) => Ok(Reply::Int(me as i64)),
        (b"GETNAME", []) => Ok(lock(&ctx.session.entry.info)
            .name
            .clone()
            .map_or(Reply::Nil, Reply::Bulk)),
        (b"SETNAME", [name]) => {
            if name.iter().any(|&b| b <= b' ' || b > b'~') {
                return Err(Reply::err(
                    "Client names cannot contain spaces, newlines or special characters.",
                ));
            }
            lock(&ctx.session.entry.info).name = (!name.is_empty()).then(|| name.clone());
            Ok(Reply::Simple("OK"))
        }
        (b"SETINFO", [attr, value]) => {
            let mut shown = lock(&ctx.session.entry.info);
            match attr.to_ascii_uppercase().as_slice() {
                b"LIB-NAME" => shown.lib_name = Some(value.clone()),
                b"LIB-VER" => shown.lib_ver = Some(value.clone()),
                _ => {
                    return Err(Reply::err(format_args!(
                        "Unrecognized option '{}'",
                        super::printable(attr)
                    )))
                }
            }
            Ok(Reply::Simple("OK"))
        }
        (b"LIST", _) => {
            let clients = lock(&ctx.server.clients);
            let text: String = clients.values().map(|c| client_line(c, me)).collect();
            Ok(Reply::Verbatim(text))
        }
        (b"INFO", []) => {
            let clients = lock(&ctx.server.clients);
            let text = clients
                .get(&me)
                .map(|c| client_line(c, me))
                .unwrap_or_default();
            Ok(Reply::Verbatim(text))
        }
        (b"KILL", rest) => {
            let target = match rest {
                [addr] => Some(("ADDR".as_bytes().to_vec(), addr.clone())),
                [filter, value] => Some((filter.to_ascii_uppercase(), value.clone())),
                _ => None,
            }
            .ok_or_else(syntax)?;
            let clients = lock(&ctx.server.clients);
            let mut killed = 0;
            for c in clients.values() {
                let hit = match target.0.as_slice() {
                    b"ADDR" => c.addr.to_string().as_bytes() == target.1.as_slice(),
                    b"ID" => super::parse_int(&target.1) == Some(c.id as i64),
                    _ => return Err(syntax()),
                };
                if hit {
                    c.killed.store(true, Ordering::Release);
                    c.kill.notify_waiters();
                    killed += 1;
                }
            }
            match (rest.len(), killed) {
                (1, 0) => Err(Reply::err("No such client")),
                (1, _) => Ok(Reply::Simple("OK")),
                (_, n) => Ok(Reply::Int(n)),
            }
        }
        _ => Err(Reply::err(format_args!(
            "unknown subcommand '{}'. Try CLIENT HELP.",
            super::printable(&args[1])
        ))),
    }
}

fn command_info(spec: &super::Spec) -> Reply {
    Reply::Array(vec![
        Reply::bulk(spec.name),
        Reply::Int(i64::from(spec.arity)),
        Reply::Set(
            spec.flags
                .iter()
                .map(|f| Reply::Status((*f).into()))
                .collect(),
        ),
        Reply::Int(i64::from(spec.keys.0)),
        Reply::Int(i64::from(spec.keys.1)),
        Reply::Int(i64::from(spec.keys.2)),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

pub fn command(_ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let sub = args.get(1).map(|s| s.to_ascii_uppercase());
    match (sub.as_deref(), args.get(2..).unwrap_or_default()) {
        (None, _) => Ok(Reply::Array(COMMANDS.iter().map(command_info).collect())),
        (Some(b"COUNT"), []) => Ok(Reply::Int(COMMANDS.len() as i64)),
        (Some(b"INFO"), names) => Ok(Reply::Array(
            names
                .iter()
                .map(|n| super::lookup(n).map_or(Reply::Nil, command_info))
                .collect(),
        )),
        (Some(b"DOCS"), names) => {
            let wanted: Vec<&super::Spec> = match names {
                [] => COMMANDS.iter().collect(),
                names => names.iter().filter_map(|n| super::lookup(n)).collect(),
            };
            Ok(Reply::Map(
                wanted
                    .into_iter()
                    .map(|s| {
                        (
                            Reply::bulk(s.name),
                            Reply::Map(vec![
                                (
                                    Reply::bulk("summary"),
                                    Reply::bulk(format!(
                                        "{} (PithDB)",
                                        s.name.to_ascii_uppercase()
                                    )),
                                ),
                                (Reply::bulk("since"), Reply::bulk("1.0.0")),
                                (
                                    Reply::bulk("group"),
                                    Reply::bulk(if s.keys.0 > 0 { "string" } else { "server" }),
                                ),
                            ]),
                        )
                    })
                    .collect(),
            ))
        }
        _ => Err(Reply::err(format_args!(
            "unknown subcommand '{}'. Try COMMAND HELP.",
            super::printable(&args[1])
        ))),
    }
}

/// The `# Pith` section's figures, shared by INFO and PITH.STATS.
fn stats_figures(db: &pith::DB) -> pith::Result<Vec<(&'static str, String)>> {
    let s = db.stats()?;
    let raw = s.total(|x| x.raw_key_bytes + x.raw_value_bytes);
    Ok(vec![
        ("pith_segments", s.segments.len().to_string()),
        ("pith_disk_bytes", s.disk_bytes.to_string()),
        ("pith_wal_bytes", s.wal_bytes.to_string()),
        ("pith_memtable_bytes", s.memtable_bytes.to_string()),
        ("pith_stored_entries", s.total(|x| x.records).to_string()),
        ("pith_stored_bytes", raw.to_string()),
        ("pith_index_bytes", s.total(|x| x.index_bytes).to_string()),
        (
            "pith_value_store_bytes",
            s.total(|x| x.store_bytes).to_string(),
        ),
        (
            "pith_resident_index_bytes",
            s.total(|x| x.resident_bytes).to_string(),
        ),
        ("pith_models", s.models.len().to_string()),
        (
            "pith_value_cache_bytes",
            s.value_cache.charged_bytes.to_string(),
        ),
        ("pith_value_cache_hits", s.value_cache.hits.to_string()),
        ("pith_value_cache_misses", s.value_cache.misses.to_string()),
        (
            "pith_compression_ratio",
            format!("{:.2}", raw as f64 / s.disk_bytes.max(1) as f64),
        ),
        ("pith_last_sequence", s.last_sequence.to_string()),
    ])
}

pub fn pith_stats(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> CmdResult {
    let figures = stats_figures(ctx.server.store.db()).map_err(engine)?;
    Ok(Reply::Map(
        figures
            .into_iter()
            .map(|(k, v)| (Reply::bulk(k), Reply::bulk(v)))
            .collect(),
    ))
}

/// The resident set size of this process, from /proc (0 where unknown).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// Stored keys with a deadline, and their mean time to live in
/// milliseconds at `now`: a walk of the keys (no value is decoded), as
/// exact as DBSIZE.
fn expiring(db: &pith::DB, now: u64) -> pith::Result<(u64, u64)> {
    let (mut n, mut total) = (0u64, 0u128);
    let mut it = db.iter();
    it.seek_to_first();
    while it.valid() {
        if let Some(d) = it.deadline() {
            n += 1;
            total += u128::from(d.saturating_sub(now));
        }
        it.next();
    }
    it.status()?;
    let mean = total.checked_div(u128::from(n)).unwrap_or(0);
    Ok((n, u64::try_from(mean).unwrap_or(u64::MAX)))
}

pub fn info(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let show = |name: &str| all || wanted.iter().any(|w| w == name);
    let server = ctx.server;
    let mut out = String::new();
    let mut section = |title: &str, lines: Vec<(&str, String)>| {
        if show(&title.to_ascii_lowercase()) {
            let _ = write!(out, "# {title}\r\n");
            for (k, v) in lines {
                let _ = write!(out, "{k}:{v}\r\n");
            }
            out.push_str("\r\n");
        }
    };
    let config = lock(&server.config).clone();
    section(
        "Server",
        vec![
            ("redis_version", crate::resp::REDIS_VERSION.into()),
            ("pith_version", env!("CARGO_PKG_VERSION").into()),
            ("redis_mode", "standalone".into()),
            ("os", std::env::consts::OS.into()),
            ("arch_bits", (usize::BITS).to_string()),
            ("process_id", std::process::id().to_string()),
            ("tcp_port", config.port.to_string()),
            ("uptime_in_seconds", server.uptime().to_string()),
            ("uptime_in_days", (server.uptime() / 86_400).to_string()),
        ],
    );
    section(
        "Clients",
        vec![
            ("connected_clients", lock(&server.clients).len().to_string()),
            ("maxclients", config.maxclients.to_string()),
        ],
    );
    let rss = rss_bytes();
    section(
        "Memory",
        vec![
            ("used_memory", rss.to_string()),
            ("used_memory_rss", rss.to_string()),
            ("maxmemory", "0".into()),
        ],
    );
    section(
        "Persistence",
        vec![
            ("loading", "0".into()),
            ("aof_enabled", "1".into()),
            ("appendfsync", config.get("appendfsync").unwrap_or_default()),
        ],
    );
    let s = &server.stats;
    section(
        "Stats",
        vec![
            (
                "total_connections_received",
                s.connections.load(Ordering::Relaxed).to_string(),
            ),
            (
                "total_commands_processed",
                s.commands.load(Ordering::Relaxed).to_string(),
            ),
            (
                "total_net_input_bytes",
                s.net_in.load(Ordering::Relaxed).to_string(),
            ),
            (
                "total_net_output_bytes",
                s.net_out.load(Ordering::Relaxed).to_string(),
            ),
            (
                "rejected_connections",
                s.rejected.load(Ordering::Relaxed).to_string(),
            ),
        ],
    );
    if show("keyspace") {
        let keys = ctx.txn.count_keys().map_err(engine)?;
        let (expires, avg_ttl) = expiring(server.store.db(), ctx.txn.now()).map_err(engine)?;
        let lines = match keys {
            0 => Vec::new(),
            n => vec![(
                "db0",
                format!("keys={n},expires={expires},avg_ttl={avg_ttl}"),
            )],
        };
        section("Keyspace", lines);
    }
    if show("pith") {
        let figures = stats_figures(server.store.db()).map_err(engine)?;
        section("Pith", figures);
    }
    Ok(Reply::Verbatim(out))
}
