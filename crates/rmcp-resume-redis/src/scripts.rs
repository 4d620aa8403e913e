//! The Lua scripts: each session operation is one atomic script, so a
//! check (the lease epoch, the floor) and the write it guards cannot be
//! split by another instance.

use redis::Script;

/// The scripts, loaded once per [`RedisLog`](crate::RedisLog).
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) reserve: Script,
    pub(crate) commit: Script,
    /// A quick call's commit (see [`crate::quick`]).
    pub(crate) quick: Script,
    pub(crate) read: Script,
    pub(crate) lease: Script,
    pub(crate) release: Script,
    pub(crate) delete: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Self {
            reserve: Script::new(include_str!("lua/reserve.lua")),
            commit: Script::new(include_str!("lua/commit.lua")),
            quick: Script::new(include_str!("lua/quick.lua")),
            read: Script::new(include_str!("lua/read.lua")),
            lease: Script::new(include_str!("lua/lease.lua")),
            release: Script::new(include_str!("lua/release.lua")),
            delete: Script::new(include_str!("lua/delete.lua")),
        }
    }
}
