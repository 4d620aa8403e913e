//! Where upstream's lines differ, in one place.
//!
//! The glue sources are compiled against rmcp 3.11 (`rmcp-resume`), against
//! rmcp 1.8 (`rmcp-resume-1`, whose build script sets `cfg(rmcp_line_1)`)
//! and against rmcp 2.2 (`rmcp-resume-2`, whose build script sets
//! `cfg(rmcp_line_1)` and `cfg(rmcp_line_2)`: 2.2 keeps 1.8's API where the
//! glue meets it, so it shares `line/v1.rs`, whose `cfg(rmcp_line_2)` items
//! are its differences), against rmcp 0.17 (`rmcp-resume-0-17`:
//! `cfg(rmcp_line_1)` and `cfg(rmcp_line_0_17)`, the same way) and against
//! rmcp 0.16 (`rmcp-resume-0-16`: `cfg(rmcp_line_1)`, `cfg(rmcp_line_0_17)`
//! and `cfg(rmcp_line_0_16)`: 0.16 lacks everything 0.17 lacks, so it is
//! built as the 0.17 line, and its `cfg(rmcp_line_0_16)` items are only what
//! 0.16 lacks beside; the least code, since each 0.17 item serves 0.16 as
//! it is), and against rmcp 0.15 (`rmcp-resume-0-15`: 0.16's three and
//! `cfg(rmcp_line_0_15)`, built as the 0.16 line the same way). Each file
//! here gives every line the same small
//! surface over what one of them lacks, so that the rest of the glue is
//! written once. Nothing outside this file and `line/` reads a
//! `cfg(rmcp_line_*)` (`.ci/test` checks it): an item that only one line has
//! is wrapped in one of the macros below, which keeps or drops it.
//!
//! | Item | 3.11 | 1.8 and 2.2 |
//! |---|---|---|
//! | `UPSTREAM_VERSION` | `3.11.0` | `1.8.0`, `2.2.0` |
//! | `cancelled_request` | the optional id | 1.8: always an id; 2.2: the optional id |
//! | `EventStream`, `EventStoreError` | upstream's | the same definitions, local |
//! | `StoreSlot` | an optional `EventStore`, and the key binding its ids to their session | always empty (1.8 has no event store) |
//! | `with_event_store!`, `with_event_store_variant!` | the items (and `SessionError`'s variant) of the event-store API | dropped |
//! | `with_response_limits!`, `with_control_queue!` | the client methods that take limits; the worker's control-queue hooks | dropped |
//! | `get_session_type!`, `get_session` | `get_stream`'s optional session | 1.8's required session |
//! | `with_fork_fields!` | `SessionConfig` with upstream's fields and the fork's, `#[non_exhaustive]` | the same; 0.17, 0.16 and 0.15: upstream's two fields only (the fork's are `ReplaySettings`) |
//! | `with_fork_variants!` | the session enums with upstream's variants and the fork's | the same; 0.17, 0.16 and 0.15: upstream's variants only (the fork's cases travel as `ForkSessionError`) |
//! | `with_fork_command!` | `SessionEvent` with the fork's variants, and the worker's channel carries it | the same; 0.17, 0.16 and 0.15: `SessionEvent` is upstream's, the channel carries a private enum of both |
//! | `plain_0x!` | its second items | the same; 0.17, 0.16 and 0.15: its first (`ReplaySessionManager` a type of its own, the fork's errors as `Io`) |
//! | `with_session_store!`, `session_store` | the items of the session store; the config's store | kept, the config's store; 0.17, 0.16 and 0.15: dropped, never a store |
//! | `idle_quit`, `sse_event`, `sse_message`, `priming`, `error_request_id`, `is_session_expired` | upstream's spellings | the same; 0.17, 0.16 and 0.15: what they have instead |
//! | `delete_and_get_stream!` | the guard's `delete_session` and `get_stream`, with custom headers | the same; 0.16 and 0.15: without (their trait's `GET` and `DELETE` take none) |
//! | `known_version` | `ProtocolVersion::KNOWN_VERSIONS` | the same; 0.16 and 0.15: their three revisions, matched by name (they have no list) |
//! | `unknown_version` | none: an unknown revision is refused (`400`) | the same; 0.16 and 0.15: served as 2025-03-26 (upstream 0.16 and 0.15 read no version header) |
//! | `post_message!`, `post` | the guard's `post_message`, and its `POST`, with custom headers | the same; 0.15: without (its trait's `POST` takes none) |
//! | `HEADER_MCP_PROTOCOL_VERSION` | upstream's constant | the same; 0.15: the header's name (it has no constant) |
//! | `refuses_credentials` | `AuthRequired` or `InsufficientScope` | the same; 0.15: `AuthRequired` (it has no scope error) |
//! | `originating_request` | SEP-2260's `OriginatingRequestId` | none (requests go to the standalone stream) |
//! | `answer_wait` | the config's: the worker runs `POST`s beside each other | zero: the worker awaits each `POST` in turn |
//! | `ResponseLimits`, `post`, `get` | the size-limited client calls | the plain calls (1.8 reads events unbounded) |
//! | `parse_response` | a tool call's answer read straight into its type, the rest as upstream parses it (`line/tool_answer.rs`) | upstream's parse |

#[cfg_attr(rmcp_line_1, path = "line/v1.rs")]
#[cfg_attr(not(rmcp_line_1), path = "line/v3.rs")]
mod imp;

#[allow(unused_imports)]
pub(crate) use imp::*;

#[cfg(feature = "transport-streamable-http-client-reqwest")]
mod keepalive;
#[cfg(feature = "transport-streamable-http-client-reqwest")]
pub(crate) use keepalive::with_tcp_keepalive;
