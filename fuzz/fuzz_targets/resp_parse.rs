//! cargo-fuzz target: `pith_server::fuzz::resp_parse` - the Redis protocol
//! parser on arbitrary bytes from the network. A panic is a bug: a crash,
//! a request that consumes nothing or more than it was given, an argument
//! over its limit, or a prefix that parses past its end.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pith_server::fuzz::resp_parse(data);
});
