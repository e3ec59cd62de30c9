//! One connection's command handling: authentication, the protocol
//! version (HELLO), transactions (MULTI/EXEC/DISCARD, WATCH), and the
//! dispatch of everything else to the command table.
//!
//! Order of checks for a request, as Redis does them: an unknown command or
//! a wrong argument count is an error (inside MULTI it also dooms the
//! transaction); without AUTH only AUTH, HELLO and QUIT run; inside MULTI
//! everything but EXEC, DISCARD, MULTI, WATCH, QUIT and RESET is queued.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cmd::{self, Ctx};
use crate::resp::{Reply, Request};
use crate::server::{Server, SessionInfo};
use crate::store::{lock, Txn};

/// What the connection does after a reply.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    /// Read the next request.
    Continue,
    /// Send the reply, then close.
    Close,
    /// Close without a reply (SHUTDOWN).
    CloseSilently,
}

/// A connection's session.
pub struct Session {
    /// What commands may change.
    pub info: SessionInfo,
    multi: Option<Vec<Request>>,
    multi_failed: bool,
    /// The last table command wrote through the batch transaction.
    last_wrote: bool,
    /// The last EXEC committed a write whose log record was deferred.
    exec_deferred: bool,
    watch_flag: Arc<AtomicBool>,
    watching: bool,
}

const NOAUTH: &str = "NOAUTH Authentication required.";

impl Session {
    /// A session for a new connection.
    pub fn new(info: SessionInfo) -> Session {
        Session {
            info,
            multi: None,
            multi_failed: false,
            last_wrote: false,
            exec_deferred: false,
            watch_flag: Arc::new(AtomicBool::new(false)),
            watching: false,
        }
    }

    /// Protocol version for encoding replies.
    pub fn proto(&self) -> u8 {
        self.info.proto
    }

    /// Handles a pipelined batch of requests in order; see `handle`.
    ///
    /// Consecutive commands of the table share one writer transaction,
    /// opened by the first that writes and committed as one engine batch
    /// before the replies go out (and before any session command, such as
    /// EXEC, runs): a pipeline of 16 SETs is one engine write, not 16. If
    /// the commit fails, the replies of the writes it held become the
    /// error.
    ///
    /// A commit's log record may be deferred (`Appendfsync::write_options`):
    /// the indices of the replies that must not be sent before the log is
    /// written are returned too (`Batch::unlogged`); with the log write
    /// failed they become its error.
    pub fn handle_batch(&mut self, server: &Server, requests: Vec<Request>) -> Batch {
        let mut out = Batch {
            replies: Vec::with_capacity(requests.len()),
            unlogged: Vec::new(),
        };
        let mut batch: Option<Txn<'_>> = None;
        let mut batched: Vec<usize> = Vec::new();
        for req in requests {
            let Some(name) = req.first() else {
                continue;
            };
            let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
            // SAVE flushes the engine: what came before must be in it.
            if is_session_command(&lower) || lower == "save" || lower == "bgsave" {
                commit(batch.take(), &batched, &mut out);
                batched.clear();
            }
            let (reply, after, wrote) = self.handle(server, req, lower, &mut batch);
            if wrote {
                batched.push(out.replies.len());
            }
            if std::mem::take(&mut self.exec_deferred) {
                out.unlogged.push(out.replies.len());
            }
            let stop = after != After::Continue;
            out.replies.push((reply, after));
            if stop {
                break;
            }
        }
        commit(batch, &batched, &mut out);
        out
    }

    /// Handles one request; table commands run in `batch` when it is open
    /// (writes open it). The flag says the command wrote through `batch`.
    fn handle<'s>(
        &mut self,
        server: &'s Server,
        args: Request,
        lower: String,
        batch: &mut Option<Txn<'s>>,
    ) -> (Reply, After, bool) {
        let (reply, after) = self.handle_inner(server, args, lower, batch);
        let wrote = self.last_wrote;
        self.last_wrote = false;
        (reply, after, wrote)
    }

    /// `lower`: the command name in lower case.
    fn handle_inner<'s>(
        &mut self,
        server: &'s Server,
        args: Request,
        lower: String,
        batch: &mut Option<Txn<'s>>,
    ) -> (Reply, After) {
        if args.is_empty() {
            return (Reply::Nil, After::Continue);
        }
        server.stats.commands.fetch_add(1, Ordering::Relaxed);
        let session_cmd = is_session_command(&lower);
        let spec = cmd::lookup_lower(&lower);
        lock(&self.info.entry.info).last = match spec {
            Some(spec) => spec.name,
            None if session_cmd => "session",
            None => "unknown",
        };
        if !session_cmd && spec.is_none() {
            self.doom();
            return (cmd::unknown(&args), After::Continue);
        }
        if !self.info.authed && !matches!(lower.as_str(), "auth" | "hello" | "quit") {
            self.doom();
            return (Reply::Error(NOAUTH.into()), After::Continue);
        }
        if let Some(spec) = spec {
            if !cmd::arity_ok(spec.arity, args.len()) {
                self.doom();
                return (cmd::wrong_arity(spec.name), After::Continue);
            }
            if let Some(queue) = &mut self.multi {
                let max = lock(&server.config).multi_max_commands;
                if queue.len() >= max {
                    self.multi_failed = true;
                    return (
                        Reply::err(format_args!(
                            "MULTI holds at most {max} commands (pith-multi-max-commands)"
                        )),
                        After::Continue,
                    );
                }
                queue.push(args);
                return (Reply::Simple("QUEUED"), After::Continue);
            }
            return (self.run(server, spec, &args, batch), After::Continue);
        }
        self.session_command(server, &lower, &args)
    }

    /// Marks the open transaction, if any, as failed (EXECABORT).
    fn doom(&mut self) {
        if self.multi.is_some() {
            self.multi_failed = true;
        }
    }

    fn run<'s>(
        &mut self,
        server: &'s Server,
        spec: &cmd::Spec,
        args: &[Vec<u8>],
        batch: &mut Option<Txn<'s>>,
    ) -> Reply {
        if spec.write && batch.is_none() {
            *batch = Some(server.store.writer());
        }
        self.last_wrote = spec.write;
        let mut reader;
        let txn = match batch {
            Some(txn) => txn,
            None => {
                reader = server.store.reader();
                &mut reader
            }
        };
        let mut ctx = Ctx {
            txn,
            server,
            session: &mut self.info,
        };
        cmd::run(spec, &mut ctx, args)
    }

    fn session_command(&mut self, server: &Server, name: &str, args: &[Vec<u8>]) -> (Reply, After) {
        let argc = args.len();
        let wrong = || (cmd::wrong_arity(name), After::Continue);
        if self.multi.is_some() && !matches!(name, "exec" | "discard" | "multi" | "quit" | "reset")
        {
            self.multi_failed = true;
            return (
                Reply::err("Command not allowed inside a transaction"),
                After::Continue,
            );
        }
        let reply = match name {
            "quit" => return (Reply::Simple("OK"), After::Close),
            "auth" => match args {
                [_, pass] | [_, _, pass] => {
                    if argc == 3 && args[1] != b"default" {
                        Reply::Error(
                            "WRONGPASS invalid username-password pair or user is disabled.".into(),
                        )
                    } else {
                        self.auth(server, pass)
                    }
                }
                _ => return wrong(),
            },
            "hello" => return (self.hello(server, args), After::Continue),
            "select" => match args {
                [_, db] => match cmd::int(db) {
                    Ok(0) => Reply::Simple("OK"),
                    Ok(_) => Reply::err("DB index is out of range"),
                    Err(e) => e,
                },
                _ => return wrong(),
            },
            "multi" if argc == 1 => match self.multi {
                Some(_) => Reply::err("MULTI calls can not be nested"),
                None => {
                    self.multi = Some(Vec::new());
                    self.multi_failed = false;
                    Reply::Simple("OK")
                }
            },
            "exec" if argc == 1 => self.exec(server),
            "discard" if argc == 1 => match self.multi.take() {
                Some(_) => {
                    self.unwatch();
                    Reply::Simple("OK")
                }
                None => Reply::err("DISCARD without MULTI"),
            },
            "watch" if argc >= 2 => {
                for k in &args[1..] {
                    server.store.watch(k, &self.watch_flag);
                }
                self.watching = true;
                Reply::Simple("OK")
            }
            "unwatch" if argc == 1 => {
                self.unwatch();
                Reply::Simple("OK")
            }
            "reset" if argc == 1 => {
                self.multi = None;
                self.unwatch();
                self.info.proto = 2;
                self.info.authed = lock(&server.config).requirepass.is_none();
                Reply::Simple("RESET")
            }
            "shutdown" => {
                server.begin_shutdown();
                return (Reply::Nil, After::CloseSilently);
            }
            _ => return wrong(),
        };
        (reply, After::Continue)
    }

    fn auth(&mut self, server: &Server, pass: &[u8]) -> Reply {
        let Some(required) = lock(&server.config).requirepass.clone() else {
            return Reply::err("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        };
        match constant_time_eq(required.as_bytes(), pass) {
            true => {
                self.info.authed = true;
                Reply::Simple("OK")
            }
            false => {
                Reply::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
            }
        }
    }

    fn hello(&mut self, server: &Server, args: &[Vec<u8>]) -> Reply {
        let mut proto = self.info.proto;
        let mut rest = args.iter().skip(1);
        if let Some(v) = rest.next() {
            match cmd::parse_int(v) {
                Some(p @ 2..=3) => proto = p as u8,
                Some(_) => return Reply::Error("NOPROTO unsupported protocol version".into()),
                None => return Reply::err("Protocol version is not an integer or out of range"),
            }
        }
        let mut name = None;
        while let Some(opt) = rest.next() {
            match opt.to_ascii_uppercase().as_slice() {
                b"AUTH" => {
                    let (Some(user), Some(pass)) = (rest.next(), rest.next()) else {
                        return cmd::syntax();
                    };
                    let reply = match user.as_slice() == b"default" {
                        true => self.auth(server, pass),
                        false => Reply::Error(
                            "WRONGPASS invalid username-password pair or user is disabled.".into(),
                        ),
                    };
                    if reply.is_error() {
                        return reply;
                    }
                }
                b"SETNAME" => name = Some(rest.next().ok_or_else(cmd::syntax)),
                _ => return cmd::syntax(),
            }
        }
        if !self.info.authed {
            return Reply::Error(NOAUTH.into());
        }
        if let Some(name) = name {
            match name {
                Ok(n) => lock(&self.info.entry.info).name = Some(n.clone()),
                Err(e) => return e,
            }
        }
        self.info.proto = proto;
        lock(&self.info.entry.info).proto = proto;
        Reply::Map(vec![
            (Reply::bulk("server"), Reply::bulk("redis")),
            (
                Reply::bulk("version"),
                Reply::bulk(crate::resp::REDIS_VERSION),
            ),
            (Reply::bulk("proto"), Reply::Int(i64::from(proto))),
            (Reply::bulk("id"), Reply::Int(self.info.id as i64)),
            (Reply::bulk("mode"), Reply::bulk("standalone")),
            (Reply::bulk("role"), Reply::bulk("master")),
            (Reply::bulk("modules"), Reply::Array(Vec::new())),
        ])
    }

    fn unwatch(&mut self) {
        self.watching = false;
        // A fresh flag: the old one may still be registered with keys.
        self.watch_flag = Arc::new(AtomicBool::new(false));
    }

    fn exec(&mut self, server: &Server) -> Reply {
        let Some(queue) = self.multi.take() else {
            return Reply::err("EXEC without MULTI");
        };
        if std::mem::take(&mut self.multi_failed) {
            self.unwatch();
            return Reply::Error(
                "EXECABORT Transaction discarded because of previous errors.".into(),
            );
        }
        let mut txn = server.store.writer();
        // Checked under the write lock: no write can land between this
        // check and the commit (a flag is only ever set, under that lock).
        if self.watching && self.watch_flag.load(Ordering::Acquire) {
            drop(txn);
            self.unwatch();
            return Reply::NilArray;
        }
        let mut replies = Vec::with_capacity(queue.len());
        for args in &queue {
            let reply = match cmd::lookup(&args[0]) {
                Some(spec) => {
                    let mut ctx = Ctx {
                        txn: &mut txn,
                        server,
                        session: &mut self.info,
                    };
                    cmd::run(spec, &mut ctx, args)
                }
                None => cmd::unknown(args),
            };
            replies.push(reply);
        }
        self.unwatch();
        match txn.commit() {
            Ok(deferred) => {
                self.exec_deferred = deferred;
                Reply::Array(replies)
            }
            Err(e) => cmd::engine(e),
        }
    }
}

/// The commands `Session` runs itself (the rest are in the table).
fn is_session_command(lower: &str) -> bool {
    matches!(
        lower,
        "auth"
            | "hello"
            | "quit"
            | "select"
            | "multi"
            | "exec"
            | "discard"
            | "watch"
            | "unwatch"
            | "reset"
            | "shutdown"
    )
}

/// Commits a batch transaction; on failure the replies at `wrote` (the
/// writes it held) become the error.
fn commit(batch: Option<Txn<'_>>, wrote: &[usize], out: &mut Batch) {
    let Some(txn) = batch else {
        return;
    };
    match txn.commit() {
        Ok(true) => out.unlogged.extend_from_slice(wrote),
        Ok(false) => {}
        Err(e) => out.fail(wrote, &cmd::engine(e)),
    }
}

/// The replies to a pipelined batch of requests.
pub struct Batch {
    /// One per request run, in order, with what the connection does next.
    pub replies: Vec<(Reply, After)>,
    /// Indices into `replies` of writes whose log record was deferred:
    /// none of `replies` may be sent before the log is written
    /// (`DB::write_log`), and if that fails these become its error.
    pub unlogged: Vec<usize>,
}

impl Batch {
    /// Replaces the replies at `indices` with `error`.
    pub fn fail(&mut self, indices: &[usize], error: &Reply) {
        for &i in indices {
            if let Some(slot) = self.replies.get_mut(i) {
                slot.0 = error.clone();
            }
        }
    }
}

/// Compares without an early exit, so the time taken does not tell how
/// much of a password guess was right (the length still shows).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_compare_in_full() {
        assert!(super::constant_time_eq(b"secret", b"secret"));
        assert!(!super::constant_time_eq(b"secret", b"secreT"));
        assert!(!super::constant_time_eq(b"secret", b"secret2"));
        assert!(!super::constant_time_eq(b"", b"x"));
        assert!(super::constant_time_eq(b"", b""));
    }
}
