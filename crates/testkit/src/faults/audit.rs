//! What Redis holds, read directly: the events a stream committed (to check
//! that nothing was sent that Redis did not commit) and its client count
//! (to check that nothing leaks connections).

use std::time::Duration;

use redis::aio::MultiplexedConnection;

/// The key prefix the `server` example uses (`RedisLogConfig`'s default).
pub const PREFIX: &str = "rmcp-resume";

/// How long one Redis command may take here.
const LIMIT: Duration = Duration::from_secs(3);

/// A connection of the checker's own.
pub async fn connect(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    let conn = tokio::time::timeout(LIMIT, client.get_multiplexed_async_connection())
        .await
        .map_err(|_| anyhow::anyhow!("no Redis connection within {LIMIT:?}"))??;
    Ok(conn)
}

async fn query<T: redis::FromRedisValue>(
    conn: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
) -> anyhow::Result<T> {
    tokio::time::timeout(LIMIT, cmd.query_async(conn))
        .await
        .map_err(|_| anyhow::anyhow!("Redis did not answer within {LIMIT:?}"))?
        .map_err(Into::into)
}

/// Redis's normal clients other than the one asking, and the list itself.
pub async fn clients(url: &str) -> anyhow::Result<(usize, String)> {
    let mut conn = connect(url).await?;
    let list: String = query(
        &mut conn,
        redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("normal"),
    )
    .await?;
    let count = list.lines().filter(|l| !l.trim().is_empty()).count();
    Ok((count.saturating_sub(1), list))
}

/// `CLIENT PAUSE ms ALL`.
pub async fn pause_clients(url: &str, hold: Duration) -> anyhow::Result<()> {
    let mut conn = connect(url).await?;
    let () = query(
        &mut conn,
        redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(u64::try_from(hold.as_millis()).unwrap_or(u64::MAX))
            .arg("ALL"),
    )
    .await?;
    Ok(())
}

/// How a stream's key is named: `s` for the standalone stream, else `M`.
pub fn stream_field(stream: Option<u64>) -> String {
    stream.map_or_else(|| "s".to_owned(), |m| m.to_string())
}

/// Whether Redis still knows `session` (its epoch key), and whether it
/// holds its deletion tombstone.
pub async fn session_known(
    conn: &mut MultiplexedConnection,
    session: &str,
) -> anyhow::Result<(bool, bool)> {
    let base = format!("{PREFIX}:{{{session}}}:");
    let epoch: bool = query(conn, redis::cmd("EXISTS").arg(format!("{base}epoch"))).await?;
    let gone: bool = query(conn, redis::cmd("EXISTS").arg(format!("{base}gone"))).await?;
    Ok((epoch, gone))
}

/// One stored event as Redis has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// Entry `N-1` exists; its `d` field.
    Event(Option<String>),
    /// No entry, and the stream's floor is above `N`: trimmed.
    Trimmed { floor: u64 },
    /// No entry, though the floor does not explain it.
    Missing { floor: Option<u64> },
}

/// Event `index` of `stream` of `session`.
pub async fn stored_event(
    conn: &mut MultiplexedConnection,
    session: &str,
    stream: Option<u64>,
    index: u64,
) -> anyhow::Result<Stored> {
    let field = stream_field(stream);
    let base = format!("{PREFIX}:{{{session}}}:");
    let entry = format!("{index}-1");
    let entries: Vec<(String, Vec<(String, String)>)> = query(
        conn,
        redis::cmd("XRANGE")
            .arg(format!("{base}x:{field}"))
            .arg(&entry)
            .arg(&entry),
    )
    .await?;
    if let Some((_, fields)) = entries.into_iter().next() {
        let data = fields.into_iter().find(|(k, _)| k == "d").map(|(_, v)| v);
        return Ok(Stored::Event(data));
    }
    let floor: Option<u64> = query(
        conn,
        redis::cmd("HGET")
            .arg(format!("{base}m:{field}"))
            .arg("floor"),
    )
    .await?;
    Ok(match floor {
        Some(floor) if floor > index => Stored::Trimmed { floor },
        floor => Stored::Missing { floor },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::cluster::RedisProc;

    #[tokio::test]
    async fn reads_an_event_as_the_log_stores_it_and_tells_trimmed_from_missing() {
        let redis = RedisProc::start().expect("redis-server");
        let mut conn = connect(&redis.url()).await.expect("connect");
        let base = format!("{PREFIX}:{{s1}}:");
        let () = redis::cmd("XADD")
            .arg(format!("{base}x:3"))
            .arg("5-1")
            .arg("d")
            .arg(r#"{"a":1}"#)
            .arg("t")
            .arg("1")
            .query_async(&mut conn)
            .await
            .map(|_: String| ())
            .expect("XADD");
        let () = redis::cmd("HSET")
            .arg(format!("{base}m:3"))
            .arg("floor")
            .arg(5)
            .query_async(&mut conn)
            .await
            .map(|_: u64| ())
            .expect("HSET");
        assert_eq!(
            stored_event(&mut conn, "s1", Some(3), 5)
                .await
                .expect("read"),
            Stored::Event(Some(r#"{"a":1}"#.to_owned()))
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(3), 4)
                .await
                .expect("read"),
            Stored::Trimmed { floor: 5 }
        );
        assert_eq!(
            stored_event(&mut conn, "s1", Some(3), 6)
                .await
                .expect("read"),
            Stored::Missing { floor: Some(5) }
        );
        let (count, _) = clients(&redis.url()).await.expect("clients");
        assert_eq!(count, 1, "this test's own connection");
    }
}
