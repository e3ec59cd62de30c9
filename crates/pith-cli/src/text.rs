//! How the command line writes numbers for people: thousands separators,
//! and nouns that agree with their count ("1 segment", "2 segments").

/// `n` with thousands separators: `1,234,567`.
pub fn thousands(n: impl TryInto<u64>) -> String {
    let digits = n.try_into().unwrap_or(u64::MAX).to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` (with thousands separators) and the noun, plural (`s`) unless
/// `n` is 1.
pub fn count(n: impl TryInto<u64>, noun: &str) -> String {
    let n = n.try_into().unwrap_or(u64::MAX);
    format!("{} {noun}{}", thousands(n), if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::{count, thousands};

    #[test]
    fn counts_read_right() {
        assert_eq!(count(1u64, "segment"), "1 segment");
        assert_eq!(count(0usize, "record"), "0 records");
        assert_eq!(count(8usize, "thread"), "8 threads");
        assert_eq!(count(15_860usize, "key"), "15,860 keys");
        assert_eq!(thousands(1_234_567u64), "1,234,567");
        assert_eq!(thousands(999u64), "999");
    }
}
