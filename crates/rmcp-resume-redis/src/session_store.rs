//! rmcp's `SessionStore` on the same Redis: the session's handshake, kept
//! under the session's hash tag beside its streams, and forgotten with them.

use redis::AsyncCommands;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::config::millis;
use crate::log::RedisLog;

/// rmcp's `SessionStore` on a [`RedisLog`]'s Redis.
///
/// `delete` forgets the session's streams and lease too, so a deleted
/// session is `404` on every instance.
#[derive(Debug, Clone)]
pub struct RedisSessionStore {
    log: RedisLog,
}

impl RedisSessionStore {
    /// The store on `log`'s Redis, under its prefix.
    pub fn new(log: RedisLog) -> Self {
        Self { log }
    }
}

#[async_trait::async_trait]
impl SessionStore for RedisSessionStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let key = self.log.session(session_id).keys().state();
        let raw: Option<String> = self.log.connection().get(key).await?;
        match raw {
            Some(raw) => Ok(Some(serde_json::from_str(&raw)?)),
            None => Ok(None),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let key = self.log.session(session_id).keys().state();
        let raw = serde_json::to_string(state)?;
        let ttl = millis(self.log.config().session_ttl);
        let () = self.log.connection().pset_ex(key, raw, ttl).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.log.session(session_id).delete().await?;
        Ok(())
    }
}
