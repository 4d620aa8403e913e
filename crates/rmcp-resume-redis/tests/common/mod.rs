//! Helpers shared by this crate's Redis tests.
#![allow(dead_code)]

use std::time::Duration;

use rmcp_resume_core::resumption::{LogView, StreamLookup};
use rmcp_resume_redis::{RedisLog, RedisLogConfig};
use rmcp_resume_testkit::redis::RedisServer;

pub const LIMIT: Duration = Duration::from_secs(20);

pub async fn connect(server: &RedisServer, config: RedisLogConfig) -> RedisLog {
    RedisLog::connect(&server.url(), config)
        .await
        .expect("connect")
}

pub fn config() -> RedisLogConfig {
    let mut config = RedisLogConfig::with_prefix("t");
    config.tail_poll = Duration::from_millis(100);
    config
}

pub async fn owned(log: &RedisLog, session: &str, owner: &str) -> rmcp_resume_redis::Lease {
    log.session(session)
        .acquire(owner, true)
        .await
        .expect("acquire")
        .lease()
        .expect("the lease is free")
}

pub fn view(lookup: StreamLookup) -> LogView {
    match lookup {
        StreamLookup::Found(view) => view,
        other => panic!("stream not found: {other:?}"),
    }
}

/// Removes a lease as its expiry would, without waiting for it.
pub async fn expire_lease(server: &RedisServer, key: &str) {
    let client = redis::Client::open(server.url()).expect("client");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("conn");
    let _: i64 = redis::cmd("DEL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .expect("DEL");
}

/// A plain connection, for looking at (and breaking) what the log wrote.
pub async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("conn")
}

/// Commits one event at `index` of `stream`, as the server's mirror does
/// (an explicit index, never the head Redis reports).
pub async fn commit_at(
    session: &rmcp_resume_redis::SessionLog,
    lease: rmcp_resume_redis::Lease,
    stream: rmcp_resume_core::resumption::StreamId,
    index: u64,
    data: &str,
) -> Result<rmcp_resume_redis::Committed, rmcp_resume_redis::RedisLogError> {
    session
        .commit(
            lease,
            &[rmcp_resume_redis::Write::Append {
                stream,
                index: Some(index),
                data: Some(data),
            }],
        )
        .await
}

/// Takes `session` over for `owner` once its lease is gone (removed here, as
/// its expiry would): the new lease.
pub async fn take_over(
    server: &RedisServer,
    log: &RedisLog,
    session: &str,
    owner: &str,
) -> rmcp_resume_redis::Lease {
    expire_lease(server, &format!("t:{{{session}}}:lease")).await;
    match log
        .session(session)
        .acquire(owner, false)
        .await
        .expect("take")
    {
        rmcp_resume_redis::LeaseOutcome::Acquired { lease, .. } => lease,
        other => panic!("{owner} did not take {session} over: {other:?}"),
    }
}

/// The standalone stream's head as an owner reads it when it takes the
/// session (the server's `take_ownership`): its first event gets this id.
/// A takeover moves it to the takeover's epoch (its segment's start).
pub async fn standalone_head(session: &rmcp_resume_redis::SessionLog) -> u64 {
    match session
        .read(
            rmcp_resume_core::resumption::StreamId::Standalone,
            u64::MAX,
            1,
        )
        .await
        .expect("read the head")
        .lookup
    {
        StreamLookup::Found(view) => view.head,
        other => panic!("no standalone stream: {other:?}"),
    }
}

/// Redis restarted without persistence: every key is gone.
pub async fn lose_everything(server: &RedisServer) {
    let mut conn = raw(server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut conn)
        .await
        .expect("FLUSHALL");
}

/// How many times Redis has run `command` (lower case, as `INFO
/// commandstats` names it), every caller's.
pub async fn command_calls(redis: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(redis)
        .await
        .expect("INFO");
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}
