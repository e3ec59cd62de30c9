//! The `pith` command line as a user meets it: the built binary run on
//! real files, checking exit status, standard output and the messages on
//! standard error. Each test names the behaviour a new user expects.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{pith, pith_with_stdin};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[track_caller]
fn ok(o: &Output) -> &Output {
    assert!(
        o.status.success(),
        "exit {:?}\nstderr: {}",
        o.status,
        stderr(o)
    );
    o
}

#[track_caller]
fn fails(o: &Output, code: i32, message: &str) {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", stderr(o));
    assert!(
        stderr(o).contains(message),
        "expected {message:?} in: {}",
        stderr(o)
    );
}

struct Dir {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl Dir {
    fn new() -> Dir {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().to_path_buf();
        Dir { _tmp: tmp, path }
    }

    fn db(&self) -> String {
        self.path.join("db").display().to_string()
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.path.join(name);
        std::fs::write(&p, bytes).expect("write");
        p.display().to_string()
    }
}

fn jsonl(records: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in records {
        out.extend_from_slice(
            serde_json::json!({"key": k, "value": v})
                .to_string()
                .as_bytes(),
        );
        out.push(b'\n');
    }
    out
}

fn live_keys(db: &str) -> u64 {
    let o = pith(&["stats", "--db", db, "--exact", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&ok(&o).stdout).expect("json");
    v["live_keys"].as_u64().expect("live_keys")
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/debian-sample.jsonl.zst")
}

// Item 1: input that is not JSON Lines is refused, not loaded as keys.

#[test]
fn gzip_xz_csv_and_json_arrays_are_refused_by_name() {
    let d = Dir::new();
    let gz = d.file("in.jsonl.gz", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    fails(&pith(&["load", "--db", &d.db(), &gz]), 2, "gzip-compressed");
    let xz = d.file("in.xz", &[0xfd, b'7', b'z', b'X', b'Z', 0]);
    fails(&pith(&["load", "--db", &d.db(), &xz]), 2, "xz-compressed");
    let csv = d.file("in.csv", b"key,value\na,1\n");
    fails(
        &pith(&["load", "--db", &d.db(), &csv]),
        2,
        "in.csv:1: not a JSON object",
    );
    let array = d.file("in.json", b"[{\"key\": \"a\", \"value\": \"1\"}]\n");
    fails(&pith(&["load", "--db", &d.db(), &array]), 2, "jq -c");
    assert_eq!(live_keys(&d.db()), 0, "nothing was loaded");
}

#[test]
fn a_byte_order_mark_and_blank_lines_are_skipped_and_dash_is_stdin() {
    let d = Dir::new();
    let mut bytes = b"\xef\xbb\xbf\n".to_vec();
    bytes.extend(jsonl(&[("a", "1"), ("b", "2")]));
    let f = d.file("bom.jsonl", &bytes);
    ok(&pith(&["load", "--db", &d.db(), &f]));
    let o = pith_with_stdin(&["load", "--db", &d.db(), "-"], Some(&jsonl(&[("c", "3")])));
    assert!(stderr(ok(&o)).contains("<stdin>"), "{}", stderr(&o));
    let o = pith(&["scan", "--db", &d.db()]);
    assert_eq!(stdout(ok(&o)), "a\t1\nb\t2\nc\t3\n");
    let keys = d.file("keys.txt", b"x\ny\n");
    ok(&pith(&["load", "--db", &d.db(), "--format", "keys", &keys]));
    assert_eq!(live_keys(&d.db()), 5);
}

// Item 2: a load that fails part way says what it left behind.

#[test]
fn a_load_stopped_by_a_bad_line_says_which_lines_are_in() {
    let d = Dir::new();
    let mut bytes = Vec::new();
    for i in 0..2500 {
        bytes.extend(jsonl(&[(&format!("k{i:05}"), "v")]));
    }
    bytes.extend_from_slice(b"{\"key\": \"bad\"}\n");
    let f = d.file("bad.jsonl", &bytes);
    // Through the log: whole batches of 1,000 before the bad one.
    let o = pith(&["load", "--db", &d.db(), "--wal", &f]);
    fails(&o, 2, "bad.jsonl:2501: missing field \"value\"");
    assert!(
        stderr(&o).contains("2,000 records from")
            && stderr(&o).contains(
                "(its lines 1-2,000) are in the database; nothing after line 2,000 was written"
            ),
        "{}",
        stderr(&o)
    );
    assert_eq!(live_keys(&d.db()), 2000);
    // Bulk: the failing chunk holds every line, so nothing is written.
    let d = Dir::new();
    let o = pith(&["load", "--db", &d.db(), &f]);
    fails(&o, 2, "the load stopped there: nothing from");
    assert_eq!(live_keys(&d.db()), 0);
}

// Item 4: counts that say what they count.

#[test]
fn stats_count_live_keys_apart_from_versions_and_tombstones() {
    let d = Dir::new();
    let db = d.db();
    ok(&pith(&["put", "--db", &db, "k", "1"]));
    ok(&pith(&["put", "--db", &db, "k", "2"]));
    ok(&pith(&["delete", "--db", &db, "k"]));
    ok(&pith(&["delete", "--db", &db, "absent"]));
    assert_eq!(live_keys(&db), 0);
    let o = pith(&["stats", "--db", &db, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&ok(&o).stdout).expect("json");
    assert_eq!(v["live_keys_exact"], false, "{v}");
    let text = stdout(ok(&pith(&["stats", "--db", &db])));
    assert!(text.contains("(estimate"), "{text}");
}

#[test]
fn loading_a_file_twice_reports_replacements_and_a_live_ratio() {
    let d = Dir::new();
    let db = d.db();
    let sample = sample().display().to_string();
    let first = pith(&["load", "--db", &db, &sample]);
    assert!(
        stderr(ok(&first)).contains("15,860 new keys, 0 replacing"),
        "{}",
        stderr(&first)
    );
    let second = pith(&["load", "--db", &db, "--no-compact", &sample]);
    assert!(
        stderr(ok(&second)).contains("0 new keys, 15,860 replacing"),
        "{}",
        stderr(&second)
    );
    assert!(
        stderr(&second).contains("holds 15,860 live keys"),
        "{}",
        stderr(&second)
    );
    let o = pith(&["stats", "--db", &db, "--exact", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&ok(&o).stdout).expect("json");
    assert_eq!(v["live_keys"], 15860);
    assert_eq!(v["stored_entries"], 2 * 15860);
    let (live, stored) = (
        v["live_compression_ratio"].as_f64().expect("live"),
        v["stored_compression_ratio"].as_f64().expect("stored"),
    );
    assert!(live < 0.6 * stored, "live {live} stored {stored}");
}

// Item 5: output for scripts, and a dump that loads back byte-exact.

#[test]
fn scan_prints_one_line_per_record_in_every_format() {
    let d = Dir::new();
    let db = d.db();
    let f = d.file(
        "in.jsonl",
        &jsonl(&[("a\tb", "line1\nline2\\"), ("c", "é")]),
    );
    ok(&pith(&["load", "--db", &db, &f]));
    let text = stdout(ok(&pith(&["scan", "--db", &db])));
    assert_eq!(text, "a\\tb\tline1\\nline2\\\\\nc\t\\xc3\\xa9\n");
    let json = stdout(ok(&pith(&["scan", "--db", &db, "--format", "json"])));
    assert_eq!(
        json.as_bytes(),
        jsonl(&[("a\tb", "line1\nline2\\"), ("c", "é")])
    );
    let hex = stdout(ok(&pith(&[
        "scan",
        "--db",
        &db,
        "--format",
        "hex",
        "--keys-only",
    ])));
    assert_eq!(hex, "610962\n63\n");
    fails(
        &pith(&["scan", "--db", &db, "--format", "raw"]),
        2,
        "--format raw prints one value",
    );
}

#[test]
fn get_prints_raw_bytes_and_tells_not_found_from_errors() {
    let d = Dir::new();
    let db = d.db();
    ok(&pith(&["put", "--db", &db, "k", "two\nlines"]));
    assert_eq!(
        ok(&pith(&["get", "--db", &db, "k", "--format", "raw"])).stdout,
        b"two\nlines"
    );
    assert_eq!(
        stdout(ok(&pith(&["get", "--db", &db, "k"]))),
        "two\\nlines\n"
    );
    fails(
        &pith(&["get", "--db", &db, "nope"]),
        1,
        "key not found: \"nope\"",
    );
    let missing = d.path.join("no-such-db").display().to_string();
    fails(&pith(&["get", "--db", &missing, "k"]), 2, "no database");
}

#[test]
fn dump_then_load_round_trips_binary_keys_and_values_byte_exact() {
    let d = Dir::new();
    let mut bytes = Vec::new();
    for i in 0u32..3000 {
        let key: Vec<u8> = [b"bin/".as_slice(), &i.to_be_bytes(), &[0xff, 0, b'\n']].concat();
        let value: Vec<u8> = (0..(i % 300)).map(|j| (j * 7 + i) as u8).collect();
        let record = serde_json::json!({
            "key_base64": base64_encode(&key),
            "value_base64": base64_encode(&value),
        });
        bytes.extend_from_slice(record.to_string().as_bytes());
        bytes.push(b'\n');
    }
    let binary = d.file("binary.jsonl", &bytes);
    let one = d.path.join("one").display().to_string();
    ok(&pith(&["load", "--db", &one, &binary]));
    ok(&pith(&[
        "load",
        "--db",
        &one,
        &sample().display().to_string(),
    ]));
    let dump1 = d.path.join("dump1.jsonl").display().to_string();
    ok(&pith(&["dump", "--db", &one, "--out", &dump1]));
    let two = d.path.join("two").display().to_string();
    let piped = pith_with_stdin(
        &["load", "--db", &two, "-"],
        Some(&std::fs::read(&dump1).expect("dump")),
    );
    ok(&piped);
    let dump2 = ok(&pith(&["dump", "--db", &two])).stdout.clone();
    assert_eq!(std::fs::read(&dump1).expect("dump"), dump2, "dumps differ");
    assert_eq!(live_keys(&two), 3000 + 15860);
    // Every record read back through get --format raw matches.
    let o = pith(&["get", "--db", &two, "0ad/0.0.26-3", "--format", "raw"]);
    assert!(ok(&o).stdout.starts_with(b"Package: 0ad\n"));
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn binary_keys_by_hex_and_scans_in_reverse() {
    let d = Dir::new();
    let db = d.db();
    ok(&pith(&["put", "--db", &db, "--hex", "00ff0a", "c3a9"]));
    ok(&pith(&["put", "--db", &db, "b", "2"]));
    ok(&pith(&["put", "--db", &db, "a", "1"]));
    assert_eq!(
        ok(&pith(&[
            "get", "--db", &db, "--hex", "00ff0a", "--format", "raw"
        ]))
        .stdout,
        "é".as_bytes()
    );
    fails(&pith(&["get", "--db", &db, "--hex", "0g"]), 2, "is not hex");
    assert_eq!(
        stdout(ok(&pith(&[
            "scan",
            "--db",
            &db,
            "--reverse",
            "--keys-only"
        ]))),
        "b\na\n\\x00\\xff\\n\n"
    );
    assert_eq!(
        stdout(ok(&pith(&[
            "scan", "--db", &db, "--hex", "--prefix", "00", "--format", "hex"
        ]))),
        "00ff0a\tc3a9\n"
    );
    ok(&pith(&["delete", "--db", &db, "--hex", "00ff0a"]));
    assert_eq!(live_keys(&db), 2);
}

// Item 6: whole-key search, said out loud.

#[test]
fn search_matches_whole_keys_and_hints_when_a_substring_would_match() {
    let d = Dir::new();
    let db = d.db();
    let f = d.file(
        "in.jsonl",
        &jsonl(&[("zypper/1.0", "a"), ("libzypp/2", "b")]),
    );
    ok(&pith(&["load", "--db", &db, &f]));
    let o = pith(&["search", "--db", &db, "zypper"]);
    assert_eq!(stdout(ok(&o)), "");
    assert!(
        stderr(&o).contains("must match a whole key"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        stdout(ok(&pith(&["search", "--db", &db, "zypper.*"]))),
        "zypper/1.0\n"
    );
    // A bad pattern shows the parser's message and where.
    let o = pith(&["search", "--db", &db, "zypper("]);
    fails(&o, 2, "unclosed group");
    assert!(
        stderr(&o).contains("zypper(\n          ^"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        stdout(ok(&pith(&["search", "--db", &db, "--contains", "zypp"]))),
        "libzypp/2\nzypper/1.0\n"
    );
    assert_eq!(
        stdout(ok(&pith(&[
            "search", "--db", &db, "lib.*", "--values", "--format", "json"
        ]))),
        "{\"key\":\"libzypp/2\",\"value\":\"b\"}\n"
    );
}

// Item 7: read-only commands work beside a writer.

#[test]
fn read_commands_work_while_a_load_holds_the_database() {
    let d = Dir::new();
    let db = d.db();
    let f = d.file("in.jsonl", &jsonl(&[("before", "1")]));
    ok(&pith(&["load", "--db", &db, &f]));
    // A load reading a pipe that stays open holds the database.
    let mut writer = Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(["load", "--db", &db, "--wal", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pith load");
    let mut pipe = writer.stdin.take().expect("stdin");
    let batch: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("during{i:04}"), "2".into()))
        .collect();
    let batch: Vec<(&str, &str)> = batch
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pipe.write_all(&jsonl(&batch)).expect("write");
    // Wait until the writer's first batch is in its log, as a read-only
    // `get` sees it. (Probing with a lock of our own could make the load
    // find the database locked.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !pith(&["get", "--db", &db, "during0999"]).status.success() {
        assert!(
            std::time::Instant::now() < deadline,
            "the load never wrote its first batch"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    fails(&pith(&["put", "--db", &db, "probe", "x"]), 2, "locked");
    assert_eq!(stdout(ok(&pith(&["get", "--db", &db, "before"]))), "1\n");
    ok(&pith(&["stats", "--db", &db]));
    ok(&pith(&["scan", "--db", &db]));
    ok(&pith(&["search", "--db", &db, "b.*"]));
    ok(&pith(&["verify", "--db", &db]));
    ok(&pith(&["dump", "--db", &db]));
    drop(pipe);
    let out = writer.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout(ok(&pith(&["get", "--db", &db, "during0999"]))),
        "2\n"
    );
}

// Item 11: long commands end with a one-line summary.

#[test]
fn compact_and_verify_end_with_a_summary() {
    let d = Dir::new();
    let db = d.db();
    let f = d.file("in.jsonl", &jsonl(&[("a", "1")]));
    ok(&pith(&["load", "--db", &db, &f]));
    let g = d.file("in2.jsonl", &jsonl(&[("b", "2")]));
    ok(&pith(&["load", "--db", &db, "--no-compact", &g]));
    let o = pith(&["compact", "--db", &db]);
    assert!(
        stderr(ok(&o)).contains("compacted 2 segments"),
        "{}",
        stderr(&o)
    );
    let o = pith(&["verify", "--db", &db]);
    assert!(
        stdout(ok(&o)).starts_with("ok: 1 segment, 2 records"),
        "{}",
        stdout(&o)
    );
}
