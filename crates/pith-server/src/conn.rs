//! One client connection: read bytes, parse every whole request they hold
//! (pipelining), run them in order, write all their replies at once.
//!
//! Bounds: unparsed bytes never exceed `client-query-buffer-limit` (the
//! client is closed with an error past it), a single bulk string never
//! exceeds `proto-max-bulk-len` (checked from its header, before its bytes
//! arrive), an idle client is closed after `timeout` seconds, and a
//! protocol error is answered and closes the connection. Commands run on
//! the connection's worker, or with `appendfsync always` (a write waits
//! for an fsync) on one allowed to block.
//!
//! Gathered log writes: unless every write is synced, a write's log
//! record stays in the engine's buffer (`WriteOptions::defer_log`). Before
//! a connection sends replies to writes it has the engine write the log:
//! one system call for the records of every connection that wrote since
//! the last. With one thread serving connections it first yields once to
//! the thread's other ready connections, which run their commands
//! meanwhile, so that call serves all of them, as Redis writes its
//! append-only file once per event-loop turn (`Server::gather_log_writes`
//! says when). A reply is never sent before its write is in the log (a
//! process crash loses no acknowledged write). Unlike Redis, whose
//! event loop sends no reply before its append-only-file write, another
//! connection may read a write before its record is written, so a crash
//! in between can lose a value a client has read (never one whose writer
//! was told OK); and if the log write fails, the writer gets an error for
//! a write others may have seen (the engine then accepts no more writes).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::config::Appendfsync;
use crate::resp::{self, Limits, Reply};
use crate::server::{ClientEntry, Server, SessionInfo};
use crate::session::{After, Batch, Session};
use crate::store::lock;

/// A connection's input and output buffers start at this size.
const BUFFER: usize = 16 << 10;

/// Most capacity a buffer keeps after a batch (larger ones are replaced).
const KEPT_BUFFER: usize = 64 << 10;

/// Serves `stream` (a TCP stream, or a TLS session over one) until the
/// client leaves, is killed, or errs.
pub async fn serve<S>(server: Arc<Server>, mut stream: S, entry: Arc<ClientEntry>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let id = entry.id;
    let authed = lock(&server.config).requirepass.is_none();
    let mut session = Session::new(SessionInfo {
        id,
        proto: 2,
        authed,
        entry: entry.clone(),
    });
    let mut input = BytesMut::with_capacity(BUFFER);
    let mut output = Vec::with_capacity(BUFFER);
    'conn: loop {
        // A kill that came while the last batch ran woke no one.
        if entry.killed.load(Ordering::Acquire) {
            break;
        }
        let (timeout, limits, buffer_limit) = {
            let c = lock(&server.config);
            let limits = Limits {
                max_bulk: c.proto_max_bulk_len,
                ..Limits::default()
            };
            (c.timeout, limits, c.client_query_buffer_limit)
        };
        let read = async {
            tokio::select! {
                r = stream.read_buf(&mut input) => Some(r),
                _ = crate::server::raised(&entry.killed, &entry.kill) => None,
            }
        };
        let read = match timeout {
            0 => read.await,
            secs => match tokio::time::timeout(Duration::from_secs(secs), read).await {
                Ok(r) => r,
                Err(_) => break, // idle past `timeout`
            },
        };
        match read {
            None => break,
            Some(Ok(0)) | Some(Err(_)) => break,
            Some(Ok(n)) => {
                server.stats.net_in.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
        if entry.killed.load(Ordering::Acquire) {
            break;
        }
        // Run every whole request received, in order.
        let mut requests = Vec::new();
        loop {
            match resp::parse(&input, &limits) {
                Ok(Some((req, used))) => {
                    input.advance(used);
                    requests.push(req);
                }
                Ok(None) => break,
                Err(e) => {
                    // Answer what came before, then the error, then close.
                    output.clear();
                    let replies = run(&server, &mut session, requests);
                    let replies = logged(&server, replies).await;
                    encode_all(&session, replies, &mut output);
                    Reply::err(&e).encode(session.proto(), &mut output);
                    let _ = stream.write_all(&output).await;
                    break 'conn;
                }
            }
        }
        if input.len() > buffer_limit {
            let msg = Reply::err("client query buffer exceeds client-query-buffer-limit; closing");
            output.clear();
            msg.encode(session.proto(), &mut output);
            let _ = stream.write_all(&output).await;
            break;
        }
        if requests.is_empty() {
            continue;
        }
        let replies = run(&server, &mut session, requests);
        let replies = logged(&server, replies).await;
        output.clear();
        let close = encode_all(&session, replies, &mut output);
        if !output.is_empty() {
            server
                .stats
                .net_out
                .fetch_add(output.len() as u64, Ordering::Relaxed);
            if stream.write_all(&output).await.is_err() {
                break;
            }
        }
        // A pipeline of large values grows the buffers; an idle client
        // should not keep them (Redis shrinks idle query buffers too): at
        // most 64 KiB each is kept once the batch is done. Loading
        // debian-packages pipelined left 128 KiB in the input buffer.
        if output.capacity() > KEPT_BUFFER {
            output = Vec::with_capacity(BUFFER);
        }
        if input.is_empty() && input.capacity() > KEPT_BUFFER {
            input = BytesMut::with_capacity(BUFFER);
        }
        if close {
            break;
        }
    }
    let _ = stream.shutdown().await;
    server.disconnect(id);
}

/// Runs `requests` in order. With `appendfsync always` a write waits for
/// an fsync, so the batch runs on a worker allowed to block
/// (`block_in_place`, which hands this worker's other connections to
/// another thread: tens of microseconds); otherwise engine calls return in
/// microseconds (memory, the page cache, an unsynced log append) and run
/// here directly.
fn run(server: &Server, session: &mut Session, requests: Vec<resp::Request>) -> Batch {
    let go = || session.handle_batch(server, requests);
    // Read apart: a guard in the `if` would be held while commands run
    // (and CONFIG or INFO would wait for it forever).
    let syncs = lock(&server.config).appendfsync == Appendfsync::Always;
    if syncs {
        tokio::task::block_in_place(go)
    } else {
        go()
    }
}

/// The replies of `batch` once the log records of its writes are written
/// (see the module documentation); when that fails, the replies of those
/// writes are the error.
async fn logged(server: &Server, mut batch: Batch) -> Vec<(Reply, After)> {
    if batch.unlogged.is_empty() {
        return batch.replies;
    }
    // Let the worker's other ready connections add their records first.
    if server.gather_log_writes {
        tokio::task::yield_now().await;
    }
    if let Err(e) = server.store.db().write_log() {
        let unlogged = std::mem::take(&mut batch.unlogged);
        batch.fail(&unlogged, &crate::cmd::engine(e));
    }
    batch.replies
}

/// Encodes `replies` up to the first that ends the connection; true when
/// one does.
fn encode_all(session: &Session, replies: Vec<(Reply, After)>, out: &mut Vec<u8>) -> bool {
    for (reply, after) in replies {
        match after {
            After::Continue => reply.encode(session.proto(), out),
            After::Close => {
                reply.encode(session.proto(), out);
                return true;
            }
            After::CloseSilently => return true,
        }
    }
    false
}
