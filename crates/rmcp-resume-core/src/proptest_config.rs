//! How the property tests run: the normal run is reproducible, the same
//! cases from a fixed seed each time and no regression files in the tree,
//! so that a red CI run can be replayed; setting `PROPTEST_CASES` or
//! `PROPTEST_RNG_SEED` turns it into an exploration, for example:
//!
//! ```text
//! PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=20000 cargo nextest run -p rmcp-resume-core
//! ```

use proptest::test_runner::{Config, RngSeed};

/// `cases` cases from `seed`, unless the environment says otherwise.
pub(crate) fn fixed(cases: u32, seed: u64) -> Config {
    let base = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            base.cases
        } else {
            cases
        },
        rng_seed: if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
            base.rng_seed
        } else {
            RngSeed::Fixed(seed)
        },
        failure_persistence: None,
        ..base
    }
}
