//! Unit tests of the protocol parser and reply encoder.

use super::*;

fn parse_all(bytes: &[u8]) -> Result<Vec<Request>, ProtocolError> {
    let limits = Limits::default();
    let mut at = 0;
    let mut out = Vec::new();
    while let Some((req, used)) = parse(&bytes[at..], &limits)? {
        out.push(req);
        at += used;
    }
    assert_eq!(at, bytes.len(), "bytes left over");
    Ok(out)
}

fn words(v: &[&str]) -> Request {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn multibulk_requests_pipelined() {
    let got = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n*0\r\n").unwrap();
    assert_eq!(got, vec![words(&["GET", "k"]), words(&["PING"]), vec![]]);
}

#[test]
fn every_prefix_of_a_request_asks_for_more() {
    let whole = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nx!\r\n";
    for cut in 0..whole.len() {
        assert_eq!(
            parse(&whole[..cut], &Limits::default()),
            Ok(None),
            "cut at {cut}"
        );
    }
    let (req, used) = parse(whole, &Limits::default()).unwrap().unwrap();
    assert_eq!((req[2].as_slice(), used), (&b"v\r\nx!"[..], whole.len()));
}

#[test]
fn inline_commands_with_redis_quoting() {
    let got = parse_all(b"SET k \"a b\\n\\x41\" \r\nGET 'it\\'s'\n\n").unwrap();
    assert_eq!(
        got,
        vec![
            vec![b"SET".to_vec(), b"k".to_vec(), b"a b\nA".to_vec()],
            words(&["GET", "it's"]),
            vec![]
        ]
    );
    let e = parse(b"SET k \"open\r\n", &Limits::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Protocol error: unbalanced quotes in request"
    );
    assert!(parse(b"GET \"a\"b\n", &Limits::default()).is_err());
}

#[test]
fn bad_frames_are_redis_protocol_errors() {
    let l = Limits::default();
    let e = |b: &[u8]| parse(b, &l).unwrap_err().to_string();
    assert_eq!(e(b"*x\r\n"), "Protocol error: invalid multibulk length");
    assert_eq!(
        e(b"*1\r\n+GET\r\n"),
        "Protocol error: expected '$', got '+'"
    );
    assert_eq!(e(b"*1\r\n$-5\r\n"), "Protocol error: invalid bulk length");
    assert_eq!(
        e(b"*1\r\n$3\r\nGETxx"),
        "Protocol error: bulk string not followed by \\r\\n"
    );
    assert_eq!(
        e(b"*99999999999\r\n"),
        "Protocol error: invalid multibulk length"
    );
}

#[test]
fn limits_are_checked_before_allocating() {
    let l = Limits {
        max_bulk: 10,
        max_args: 3,
        max_inline: 16,
    };
    assert!(parse(b"*1\r\n$11\r\n", &l).is_err(), "bulk over the limit");
    assert!(parse(b"*4\r\n", &l).is_err(), "too many arguments");
    assert!(
        parse(&[b'a'; 17], &l).is_err(),
        "inline line over the limit, no newline yet"
    );
    assert!(parse(&[b'1'; 40], &l).is_err());
    assert_eq!(parse(b"*1\r\n$10\r\n", &l), Ok(None));
    // A header that never ends is refused once over the bound.
    let mut long = b"*1\r\n$".to_vec();
    long.extend(std::iter::repeat_n(b'9', 40));
    assert!(parse(&long, &l).is_err());
}

#[test]
fn replies_in_resp2_and_resp3() {
    let enc = |r: Reply, p: u8| {
        let mut out = Vec::new();
        r.encode(p, &mut out);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(enc(Reply::Nil, 2), "$-1\r\n");
    assert_eq!(enc(Reply::Nil, 3), "_\r\n");
    let map = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
    assert_eq!(enc(map.clone(), 2), "*2\r\n$1\r\na\r\n:1\r\n");
    assert_eq!(enc(map, 3), "%1\r\n$1\r\na\r\n:1\r\n");
    assert_eq!(enc(Reply::Double(1.5), 2), "$3\r\n1.5\r\n");
    assert_eq!(enc(Reply::Double(1.5), 3), ",1.5\r\n");
    assert_eq!(enc(Reply::Bool(true), 3), "#t\r\n");
    assert_eq!(enc(Reply::Error("ERR a\r\nb".into()), 2), "-ERR a  b\r\n");
    assert_eq!(enc(Reply::Verbatim("x".into()), 3), "=5\r\ntxt:x\r\n");
}

#[test]
fn the_fuzz_entry_point_holds_on_random_and_mutated_input() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let seed =
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\nGET \"a b\" 'c'\r\n*1\r\n$4\r\nPING\r\n";
    for round in 0..20_000 {
        let mut data = seed.to_vec();
        if round % 2 == 0 {
            for _ in 0..1 + next() % 4 {
                let i = (next() % data.len() as u64) as usize;
                data[i] = next() as u8;
            }
        } else {
            data = (0..next() % 64)
                .map(|_| b"*$\r\n0123456789-\"' aZ"[(next() % 19) as usize])
                .collect();
        }
        crate::fuzz::resp_parse(&data);
    }
}

/// Found by the fuzzer (`fuzz/artifacts/resp_parse/crash-7bc30375...`): an
/// inline request of more words than `max_args` was accepted, since only
/// multibulk requests counted their arguments.
#[test]
fn inline_requests_are_bounded_in_arguments_too() {
    let limits = Limits {
        max_args: 3,
        ..Limits::default()
    };
    assert!(parse(b"a b c\n", &limits).unwrap().is_some());
    assert_eq!(
        parse(b"a b c d\n", &limits).unwrap_err().to_string(),
        "Protocol error: too many arguments in an inline request"
    );
    let found = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/resp-inline-too-many-args.bin"
    ))
    .expect("the fuzzer's input");
    crate::fuzz::resp_parse(&found);
}
