//! How the property tests run: the normal run is reproducible, the same
//! cases from a fixed seed each time and no regression files in the tree,
//! so that a red CI run can be replayed. `proptest!` applies
//! `PROPTEST_CASES` and `PROPTEST_RNG_SEED` over these settings, which turns
//! a run into an exploration, for example:
//!
//! ```text
//! PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=20000 cargo nextest run -p rmcp-resume-core
//! ```

use proptest::test_runner::{Config, RngSeed};

/// `cases` cases from `seed`.
pub(crate) fn fixed(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}
