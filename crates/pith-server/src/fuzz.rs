//! Fuzz entry points (cargo-fuzz targets in `fuzz/` call these; unit tests
//! run them on random and mutated inputs). Untrusted bytes from the
//! network reach only the protocol parser, so that is what is fuzzed.

use crate::resp::{parse, Limits, Reply};

/// Parses `data` as a stream of requests with small limits, as a
/// connection would, and checks what the parser promises: no panic, every
/// request consumes at least one byte and no more than was given, an
/// argument never exceeds the bulk limit, and a stream cut anywhere before
/// a request's end asks for more instead of misparsing.
pub fn resp_parse(data: &[u8]) {
    let limits = Limits {
        max_bulk: 4096,
        max_args: 64,
        max_inline: 1024,
    };
    let mut at = 0;
    while at < data.len() {
        match parse(&data[at..], &limits) {
            Ok(Some((args, used))) => {
                assert!(
                    used > 0 && at + used <= data.len(),
                    "parse used {used} of {}",
                    data.len() - at
                );
                assert!(
                    args.len() <= limits.max_args.max(1)
                        && args
                            .iter()
                            .all(|a| a.len() <= limits.max_bulk.max(limits.max_inline))
                );
                for cut in [used / 2, used.saturating_sub(1)] {
                    if cut > 0 && cut < used {
                        if let Ok(Some((_, u))) = parse(&data[at..at + cut], &limits) {
                            assert!(u <= cut, "a prefix parsed past its end");
                        }
                    }
                }
                // Replies to what was parsed encode in both protocols.
                let mut out = Vec::new();
                Reply::Array(args.into_iter().map(Reply::Bulk).collect()).encode(2, &mut out);
                Reply::Map(vec![(Reply::Nil, Reply::Double(f64::NAN))]).encode(3, &mut out);
                at += used;
            }
            Ok(None) | Err(_) => return,
        }
    }
}
