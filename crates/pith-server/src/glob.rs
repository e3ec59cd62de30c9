//! Redis glob patterns (KEYS, SCAN MATCH) as whole-key regexes over
//! bytes, so they are searched through the tries instead of tested
//! against every key.
//!
//! As Redis's `stringmatchlen`: `*` any bytes, `?` one byte, `[abc]`,
//! `[^abc]`, ranges `[a-z]` (either order), `\x` the byte `x`; `[]`
//! matches nothing, and an unclosed `[` is a class up to the end of the
//! pattern. Every byte becomes a `\xHH` escape in
//! byte mode (`(?-u)`), so no glob byte has a regex meaning by accident.

use std::fmt::Write as _;

/// The regex (for `pith::DB::search`) matching the keys `glob` matches.
pub fn to_regex(glob: &[u8]) -> String {
    let mut re = String::from("(?s-u)");
    let mut i = 0;
    while let Some(&c) = glob.get(i) {
        match c {
            b'*' => {
                // Runs of stars are one star.
                while glob.get(i + 1) == Some(&b'*') {
                    i += 1;
                }
                re.push_str(".*");
            }
            b'?' => re.push('.'),
            b'[' => {
                i += 1;
                let negate = glob.get(i) == Some(&b'^');
                if negate {
                    i += 1;
                }
                let mut items: Vec<(u8, u8)> = Vec::new();
                while let Some(&b) = glob.get(i) {
                    if b == b']' {
                        break;
                    }
                    let (lo, next) = match b {
                        b'\\' if i + 1 < glob.len() => (glob[i + 1], i + 2),
                        _ => (b, i + 1),
                    };
                    if glob.get(next) == Some(&b'-')
                        && next + 1 < glob.len()
                        && glob[next + 1] != b']'
                    {
                        let (hi, after) = match glob[next + 1] {
                            b'\\' if next + 2 < glob.len() => (glob[next + 2], next + 3),
                            h => (h, next + 2),
                        };
                        items.push((lo.min(hi), lo.max(hi)));
                        i = after;
                    } else {
                        items.push((lo, lo));
                        i = next;
                    }
                }
                if items.is_empty() {
                    // `[]` matches nothing, `[^]` any byte.
                    re.push_str(if negate { "." } else { "[^\\x00-\\xff]" });
                } else {
                    re.push('[');
                    if negate {
                        re.push('^');
                    }
                    for (lo, hi) in items {
                        let _ = write!(re, "\\x{lo:02x}");
                        if hi != lo {
                            let _ = write!(re, "-\\x{hi:02x}");
                        }
                    }
                    re.push(']');
                }
            }
            b'\\' if i + 1 < glob.len() => {
                i += 1;
                let _ = write!(re, "\\x{:02x}", glob[i]);
            }
            other => {
                let _ = write!(re, "\\x{other:02x}");
            }
        }
        i += 1;
    }
    re
}

#[cfg(test)]
mod tests {
    use super::to_regex;

    fn matches(glob: &str, key: &[u8]) -> bool {
        pith_trie::KeyRegex::new(&to_regex(glob.as_bytes()))
            .expect("a glob is always a valid regex")
            .is_match(key)
    }

    #[test]
    fn globs_match_as_in_redis() {
        assert!(matches("*", b""));
        assert!(matches("*", b"\xff\n"));
        assert!(matches("h?llo", b"hello"));
        assert!(!matches("h?llo", b"hllo"));
        assert!(matches("h*llo", b"heeeello"));
        assert!(matches("h[ae]llo", b"hallo"));
        assert!(!matches("h[ae]llo", b"hillo"));
        assert!(matches("h[^e]llo", b"hallo"));
        assert!(!matches("h[^e]llo", b"hello"));
        assert!(matches("h[a-b]llo", b"hbllo"));
        assert!(matches("h[b-a]llo", b"hallo"));
        assert!(matches("a\\*b", b"a*b"));
        assert!(!matches("a\\*b", b"axb"));
        assert!(matches("user:(1).+", b"user:(1).+"));
        assert!(!matches("user:(1).+", b"user:1x"));
    }

    #[test]
    fn every_glob_is_a_valid_regex() {
        for g in [
            "[", "[^", "\\", "[a-", "[\\", "***", "[]", "[^]", "a[b-]c", "\u{e9}*",
        ] {
            let re = to_regex(g.as_bytes());
            assert!(pith_trie::KeyRegex::new(&re).is_ok(), "{g:?} -> {re}");
        }
    }
}
