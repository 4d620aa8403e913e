//! Promises of docs/redis.md that had no test (issue 44's list), each
//! checked against a real `redis-server`.

use std::sync::Arc;

use rmcp_resume_core::resumption::StreamId;
use rmcp_resume_core::shared::{MirrorOp, SharedLog};
use rmcp_resume_redis::{RedisLog, RedisLogError, RedisShared};
use rmcp_resume_testkit::redis::RedisServer;

mod common;
use common::{config, connect, raw};

/// "`maxmemory-policy noeviction`": a Redis that may evict a session's keys
/// is refused at connect, naming the setting, rather than used until it
/// evicts an event without a word.
#[tokio::test]
async fn a_redis_that_may_evict_keys_is_refused_at_connect() {
    let server = RedisServer::start();
    connect(&server, config()).await;
    let mut conn = raw(&server).await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("allkeys-lru")
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET");
    let refused = RedisLog::connect(&server.url(), config()).await;
    match refused {
        Err(error @ RedisLogError::Evicting { .. }) => {
            assert!(error.to_string().contains("noeviction"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

/// "An append behind its call's answer: dropped and counted": the count
/// `RedisShared::dropped_late_appends` reports.
#[tokio::test]
async fn a_late_append_is_dropped_and_counted() {
    let server = RedisServer::start();
    let log = connect(&server, config()).await;
    let shared = RedisShared::new(log, "a");
    let counter = shared.clone();
    let shared: Arc<dyn SharedLog> = Arc::new(shared);
    shared.acquire("s", true).await.expect("acquire");
    let epoch = match shared.acquire("s", false).await.expect("renew") {
        rmcp_resume_core::shared::Ownership::Owned { epoch } => epoch,
        other => panic!("{other:?}"),
    };
    let m = shared
        .reserve_streams("s", epoch, 1, 0)
        .await
        .expect("reserve");
    let ops = [
        MirrorOp::Open {
            stream: m,
            request_id: "1".into(),
        },
        MirrorOp::Append {
            stream: StreamId::Request(m),
            index: 0,
            data: Some("{\"answer\":1}".into()),
        },
        MirrorOp::Finish { stream: m },
        MirrorOp::Append {
            stream: StreamId::Request(m),
            index: 1,
            data: Some("{\"late\":1}".into()),
        },
    ];
    let dropped = shared.commit("s", epoch, &ops).await.expect("commit");
    assert_eq!(dropped, [m]);
    assert_eq!(counter.dropped_late_appends(), 1);
    let snapshot = shared
        .read("s", StreamId::Request(m), 0, 8)
        .await
        .expect("read");
    assert_eq!(snapshot.events.len(), 1, "{snapshot:?}");
}
