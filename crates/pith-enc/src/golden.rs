//! Test support (feature `golden`): the golden-bytes blocks of
//! `docs/format.md`, so each crate's golden test compares its encoder with
//! the spec the same way.
//!
//! A block is a fenced code block whose info string is `text NAME`; its
//! lines are hex bytes separated by spaces, optionally after an `offset: `
//! prefix, or `zeros N` for a run of N zero bytes (a symbol table's unused
//! entries). These functions panic on a missing block or a bad hex byte:
//! they are for tests only.

/// The bytes of block `name` in `doc` (the text of `docs/format.md`).
///
/// # Panics
///
/// When there is no such block or a byte is not two hex digits.
pub fn block(doc: &str, name: &str) -> Vec<u8> {
    let Some(body) = doc
        .split(&format!("```text {name}\n"))
        .nth(1)
        .and_then(|rest| rest.split("```").next())
    else {
        panic!("no `{name}` block in docs/format.md");
    };
    let mut bytes = Vec::new();
    for line in body.lines() {
        let hex = line.split_once(": ").map_or(line, |(_, hex)| hex);
        if let Some(n) = hex.trim().strip_prefix("zeros ") {
            match n.parse::<usize>() {
                Ok(n) => bytes.resize(bytes.len() + n, 0),
                Err(_) => panic!("`{n}` in block `{name}` is not a count of zeros"),
            }
            continue;
        }
        for h in hex.split_whitespace() {
            match u8::from_str_radix(h, 16) {
                Ok(b) => bytes.push(b),
                Err(_) => panic!("`{h}` in block `{name}` is not a hex byte"),
            }
        }
    }
    bytes
}

/// `bytes` as lines of 16 hex bytes after their offset, the form the
/// blocks use (to paste into the doc when a format changes on purpose),
/// runs of four or more all-zero lines as one `zeros N` line.
pub fn hex(bytes: &[u8]) -> String {
    let lines: Vec<&[u8]> = bytes.chunks(16).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let run = lines[i..]
            .iter()
            .take_while(|c| c.len() == 16 && c.iter().all(|&b| b == 0))
            .count();
        if run >= 4 {
            out.push(format!("{:08x}: zeros {}", 16 * i, 16 * run));
            i += run;
            continue;
        }
        let hex: Vec<String> = lines[i].iter().map(|x| format!("{x:02x}")).collect();
        out.push(format!("{:08x}: {}", 16 * i, hex.join(" ")));
        i += 1;
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_parse_with_and_without_offsets() {
        let doc = "x\n```text a\n00 01\nff\n```\n```text b\n0000: 0a 0b\n0002: 0c\n```\n";
        assert_eq!(block(doc, "a"), vec![0, 1, 0xff]);
        assert_eq!(block(doc, "b"), vec![10, 11, 12]);
        assert_eq!(hex(&[1, 2, 255]), "00000000: 01 02 ff");
    }

    #[test]
    fn zero_runs_round_trip() {
        let mut bytes = vec![7u8; 20];
        bytes.extend([0; 16 * 5 + 12]);
        bytes.push(9);
        let text = hex(&bytes);
        assert!(text.contains(": zeros "), "{text}");
        assert!(text.lines().count() < 6, "{text}");
        let doc = format!("```text z\n{text}\n```\n");
        assert_eq!(block(&doc, "z"), bytes);
        // Three zero lines stay lines.
        let short = [0u8; 48];
        assert!(!hex(&short).contains("zeros"));
        assert_eq!(
            block(&format!("```text s\n{}\n```\n", hex(&short)), "s"),
            short
        );
    }
}
