//! The log's lock and the budgets' counters: std's, or loom's when the crate
//! is built with `--cfg rmcp_resume_loom`, so that loom's model checker
//! runs every interleaving of the wake path (see docs/testing.md). Only
//! what a reader and the owner share across threads is swapped; the rest
//! stays std.

#[cfg(not(rmcp_resume_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize};
#[cfg(not(rmcp_resume_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(rmcp_resume_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize};
#[cfg(rmcp_resume_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
