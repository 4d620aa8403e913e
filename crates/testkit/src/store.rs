//! A session store in memory, shared by the test servers that stand for
//! several instances of one deployment (or one instance before and after a
//! restart).

use std::collections::HashMap;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use tokio::sync::RwLock;

/// Session state in a map.
#[derive(Debug, Default)]
pub struct MemoryStore(RwLock<HashMap<String, SessionState>>);

#[async_trait::async_trait]
impl SessionStore for MemoryStore {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(self.0.read().await.get(id).cloned())
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.0.write().await.insert(id.to_owned(), state.clone());
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.0.write().await.remove(id);
        Ok(())
    }
}
