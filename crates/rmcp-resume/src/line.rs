//! Where upstream's lines differ, in one place.
//!
//! The glue sources are compiled against rmcp 3.11 (`rmcp-resume`), against
//! rmcp 1.8 (`rmcp-resume-1`, whose build script sets `cfg(rmcp_line_1)`)
//! and against rmcp 2.2 (`rmcp-resume-2`, whose build script sets
//! `cfg(rmcp_line_1)` and `cfg(rmcp_line_2)`: 2.2 keeps 1.8's API where the
//! glue meets it, so it shares `line/v1.rs`, whose `cfg(rmcp_line_2)` items
//! are its differences). Each file here gives every line the same small
//! surface over what one of them lacks, so that the rest of the glue is
//! written once:
//!
//! | Item | 3.11 | 1.8 and 2.2 |
//! |---|---|---|
//! | `UPSTREAM_VERSION` | `3.11.0` | `1.8.0`, `2.2.0` |
//! | `cancelled_request` | the optional id | 1.8: always an id; 2.2: the optional id |
//! | `EventStream`, `EventStoreError` | upstream's | the same definitions, local |
//! | `StoreSlot` | an optional `EventStore` | always empty (1.8 has no event store) |
//! | `originating_request` | SEP-2260's `OriginatingRequestId` | none (requests go to the standalone stream) |
//! | `ResponseLimits`, `post`, `get` | the size-limited client calls | the plain calls (1.8 reads events unbounded) |

#[cfg_attr(rmcp_line_1, path = "line/v1.rs")]
#[cfg_attr(not(rmcp_line_1), path = "line/v3.rs")]
mod imp;

#[allow(unused_imports)]
pub(crate) use imp::*;
