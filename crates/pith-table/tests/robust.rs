//! Stored bytes are untrusted: random and mutated keys and rows never
//! panic the decoders (the cargo-fuzz target `table_decode` runs the same
//! entry point for longer).

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..64)) {
        pith_table::fuzz_decode(&data);
    }

    #[test]
    fn bytes_shaped_like_keys_never_panic(
        pick in any::<u8>(),
        parts in prop::collection::vec(prop_oneof![Just(vec![0u8]), Just(vec![1u8]), Just(vec![0, 1]), Just(vec![0, 0xff]), prop::collection::vec(any::<u8>(), 0..9)], 0..8),
    ) {
        let mut data = vec![pick];
        for p in parts {
            data.extend(p);
        }
        pith_table::fuzz_decode(&data);
    }
}
