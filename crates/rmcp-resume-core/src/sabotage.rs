//! Builds broken on purpose, so that the checks that should catch each
//! break can be watched going red.
//!
//! Compiled in only with the `__sabotage` feature, which only the
//! workspace's own test, example and bench builds switch on (the root
//! package's dev-dependency; no published crate does); without it [`on`]
//! is a constant `false` and every break folds away. Cargo features cannot
//! be private: an application must never enable it. With it, a process breaks
//! only what the environment variable [`VARIABLE`] names (a comma-separated
//! list of [`Break::name`]s), read once.
//!
//! | Break | What the product does instead | What must report it |
//! |---|---|---|
//! | `open-gates` | a reader sends events of a shared log before the log holds them | the fault checker's live audit (`early`), the final audit (`not-committed`) |
//! | `replay-skips` | an instance that does not own the session serves a resume from one event past the cursor | the fault checker (`silent-gap`) |
//! | `empty-post` | every third `POST` answered with an SSE stream on a shared log gets its `200` head and no event | the fault checker (`empty-200`) |
//! | `false-floor` | a standalone resume served from the shared log that could replay everything claims a floor one past the first event it sends (`complete:false`) | the fault checker's live audit of claimed floors (`floor-disagrees`) |
//! | `standalone-skips` | the same, on the standalone stream only, where an event no client received leaves nothing in the clients' books | the fault checker's live audit of standalone jumps (`silent-gap`) |

/// The environment variable naming the breaks a process runs with.
pub const VARIABLE: &str = "RMCP_RESUME_SABOTAGE";

/// One deliberate break of the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// Readers of a shared log do not wait for the commit.
    OpenGates,
    /// A resume served from the shared log skips the cursor's next event.
    ReplaySkips,
    /// A standalone resume served from the shared log skips the cursor's
    /// next event.
    StandaloneSkips,
    /// Every third `POST` on a shared log is answered `200` with an SSE
    /// stream that carries no event.
    EmptyPost,
    /// A standalone resume served from the shared log claims a floor above
    /// what the log holds.
    FalseFloor,
}

impl Break {
    /// Every break, in the table's order.
    pub const ALL: [Self; 5] = [
        Self::OpenGates,
        Self::ReplaySkips,
        Self::StandaloneSkips,
        Self::EmptyPost,
        Self::FalseFloor,
    ];

    /// Its name in [`VARIABLE`].
    pub const fn name(self) -> &'static str {
        match self {
            Self::OpenGates => "open-gates",
            Self::ReplaySkips => "replay-skips",
            Self::StandaloneSkips => "standalone-skips",
            Self::EmptyPost => "empty-post",
            Self::FalseFloor => "false-floor",
        }
    }

    #[cfg_attr(not(feature = "__sabotage"), allow(dead_code))]
    const fn bit(self) -> u8 {
        match self {
            Self::OpenGates => 1,
            Self::ReplaySkips => 2,
            Self::StandaloneSkips => 4,
            Self::EmptyPost => 8,
            Self::FalseFloor => 16,
        }
    }
}

/// Whether this process runs with `which` broken.
#[cfg(feature = "__sabotage")]
pub fn on(which: Break) -> bool {
    use std::sync::OnceLock;
    static BREAKS: OnceLock<u8> = OnceLock::new();
    let breaks = BREAKS.get_or_init(|| {
        let named = std::env::var(VARIABLE).unwrap_or_default();
        let breaks = named
            .split(',')
            .filter_map(|name| Break::ALL.into_iter().find(|b| b.name() == name.trim()))
            .fold(0, |bits, b| bits | b.bit());
        if breaks != 0 {
            tracing::error!(breaks = %named, "this process is broken on purpose");
        }
        breaks
    });
    breaks & which.bit() != 0
}

/// Whether this process runs with `which` broken: never, in this build.
#[cfg(not(feature = "__sabotage"))]
#[inline(always)]
pub const fn on(_which: Break) -> bool {
    false
}
