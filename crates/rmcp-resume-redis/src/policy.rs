//! The one Redis setting the log cannot work without: `maxmemory-policy
//! noeviction`.
//!
//! Under any other policy Redis may evict a key of a live session when it
//! runs short of memory: an event, a stream's state, the epoch. Each is a
//! silent gap or a forgotten owner, with nothing to tell the client. Under
//! `noeviction` Redis refuses the write instead, which the owner sees and
//! reports (its readers wait, resumes get `503`).
//!
//! | `CONFIG GET maxmemory-policy` answers | [`RedisLog::connect`](crate::RedisLog::connect) |
//! |---|---|
//! | `noeviction` | connects |
//! | another policy | fails with [`RedisLogError::Evicting`] |
//! | an error (`CONFIG` renamed or refused, as on some managed services) | connects, and logs once at `WARN` that the policy could not be checked |
//!
//! A Redis Cluster is not asked (each node has its own setting, and a node
//! added later would not be): its nodes must be configured alike.

use crate::connection::Connection;
use crate::error::RedisLogError;

/// The policy the log requires.
pub const REQUIRED_POLICY: &str = "noeviction";

/// Checks `conn`'s Redis for [`REQUIRED_POLICY`]; see the [module docs](self).
pub(crate) async fn require_noeviction(conn: &mut Connection) -> Result<(), RedisLogError> {
    let answer: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(conn)
        .await;
    match answer {
        Ok(pair) => match pair.as_slice() {
            [_, policy] if policy == REQUIRED_POLICY => Ok(()),
            [_, policy] => Err(RedisLogError::Evicting {
                policy: policy.clone(),
            }),
            _ => Err(RedisLogError::Reply(format!(
                "CONFIG GET maxmemory-policy answered {pair:?}"
            ))),
        },
        Err(error) => {
            tracing::warn!(%error, "could not check redis's maxmemory-policy; it must be noeviction");
            Ok(())
        }
    }
}
