//! Test support (feature `golden`): the golden-bytes blocks of
//! `docs/format.md`, so each crate's golden test compares its encoder with
//! the spec the same way.
//!
//! A block is a fenced code block whose info string is `text NAME`; its
//! lines are hex bytes separated by spaces, optionally after an `offset: `
//! prefix. These functions panic on a missing block or a bad hex byte:
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
    body.lines()
        .flat_map(|line| {
            line.split_once(": ")
                .map_or(line, |(_, hex)| hex)
                .split_whitespace()
        })
        .map(|h| match u8::from_str_radix(h, 16) {
            Ok(b) => b,
            Err(_) => panic!("`{h}` in block `{name}` is not a hex byte"),
        })
        .collect()
}

/// `bytes` as lines of 16 hex bytes, the form the blocks use (to paste
/// into the doc when a format changes on purpose).
pub fn hex(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .map(|c| {
            c.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_parse_with_and_without_offsets() {
        let doc = "x\n```text a\n00 01\nff\n```\n```text b\n0000: 0a 0b\n0002: 0c\n```\n";
        assert_eq!(block(doc, "a"), vec![0, 1, 0xff]);
        assert_eq!(block(doc, "b"), vec![10, 11, 12]);
        assert_eq!(hex(&[1, 2, 255]), "01 02 ff");
    }
}
