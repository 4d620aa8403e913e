//! Deleting a session whose stream numbers jumped: a takeover numbers its
//! calls from its epoch (about 2^50), a seeding after a loss from the
//! owner's lowest number. The delete steps over the numbers nobody was
//! given, in a bounded number of round trips, and leaves only the
//! tombstone.

mod common;

use std::time::Duration;

use common::{command_calls, config, connect, owned, raw, take_over};
use rmcp_resume_core::resumption::StreamId;
use rmcp_resume_redis::{DELETE_SLICE, Lease, SessionLog, Write};
use rmcp_resume_testkit::redis::RedisServer;

/// One quick call on a stream reserved under `lease`: its number.
async fn call(session: &SessionLog, lease: Lease) -> u64 {
    let m = session.reserve_streams(lease, 1).await.expect("reserve");
    let writes = [
        Write::Append {
            stream: StreamId::Request(m),
            index: Some(0),
            data: None,
        },
        Write::Open {
            stream: m,
            request_id: "1",
        },
        Write::Append {
            stream: StreamId::Request(m),
            index: Some(1),
            data: Some("{}"),
        },
        Write::Finish { stream: m },
    ];
    session.commit(lease, &writes).await.expect("commit");
    m
}

/// Deletes `session` within 10 s and says in how many round trips (every
/// round trip is one `EVALSHA` of `delete.lua`).
async fn delete(session: &SessionLog, server: &RedisServer) -> u64 {
    let mut redis = raw(server).await;
    let ran = command_calls(&mut redis, "evalsha").await;
    tokio::time::timeout(Duration::from_secs(10), session.delete())
        .await
        .expect("deleted within 10 s")
        .expect("delete");
    command_calls(&mut redis, "evalsha").await - ran
}

#[tokio::test]
async fn a_session_taken_over_is_deleted_in_a_few_round_trips() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("c");
    let first = owned(&log, "c", "a").await;
    let before = call(&session, first).await;
    let second = take_over(&server, &log, "c", "b").await;
    let after = call(&session, second).await;
    assert!(
        after > before + 1_000 * DELETE_SLICE,
        "the takeover numbers from its epoch: {before}, then {after}"
    );
    // A slice up to the jump, one past it, and the session-wide keys.
    let trips = delete(&session, &server).await;
    assert!(trips <= 4, "{trips} round trips");
    let mut redis = raw(&server).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("t:{c}:*")
        .query_async(&mut redis)
        .await
        .expect("KEYS");
    assert_eq!(keys, ["t:{c}:gone"], "both calls' keys went");
}

/// A seeding after Redis lost the session numbers from the owner's lowest
/// number on: the same.
#[tokio::test]
async fn a_session_seeded_again_after_a_loss_is_deleted_in_a_few_round_trips() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let session = log.session("l");
    let lease = owned(&log, "l", "a").await;
    let lowest = 1_u64 << 40;
    let m = session
        .reserve_streams_from(lease, 1, lowest)
        .await
        .expect("reserve");
    assert_eq!(m, lowest);
    let trips = delete(&session, &server).await;
    assert!(trips <= 4, "{trips} round trips");
}
