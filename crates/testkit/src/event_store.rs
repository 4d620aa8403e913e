//! An `EventStore` in memory, as an application would write one: ids are a
//! global counter, and a replay yields the stream's later events and ends.
//! It forgets its oldest events on request, so a test can evict a cursor.

use std::sync::Mutex;

use rmcp::transport::streamable_http_server::session::{
    EventStore, EventStoreError, EventStream, ServerSseMessage,
};

/// Events in a list: `(stream, id, event)`, oldest first.
#[derive(Debug, Default)]
pub struct MemoryEventStore {
    events: Mutex<Vec<(String, u64, ServerSseMessage)>>,
    next: Mutex<u64>,
}

impl MemoryEventStore {
    /// Forgets every event but the newest `keep`.
    pub fn evict_all_but(&self, keep: usize) {
        let mut events = self.events.lock().expect("store lock");
        let drop = events.len().saturating_sub(keep);
        events.drain(..drop);
    }

    /// The stream keys written so far, in order of first use.
    pub fn streams(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for (stream, _, _) in self.events.lock().expect("store lock").iter() {
            if !seen.contains(stream) {
                seen.push(stream.clone());
            }
        }
        seen
    }
}

#[async_trait::async_trait]
impl EventStore for MemoryEventStore {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let id = {
            let mut next = self.next.lock().expect("store lock");
            *next += 1;
            *next
        };
        self.events
            .lock()
            .expect("store lock")
            .push((stream_id.to_owned(), id, event.clone()));
        Ok(format!("e{id}"))
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let wanted: Option<u64> = last_event_id.strip_prefix('e').and_then(|n| n.parse().ok());
        let events = self.events.lock().expect("store lock");
        let stream = wanted.and_then(|wanted| {
            events
                .iter()
                .find(|(_, id, _)| *id == wanted)
                .map(|(stream, _, _)| stream.clone())
        });
        // An unknown or forgotten id replays nothing, as many stores do.
        let later: Vec<ServerSseMessage> = match (stream, wanted) {
            (Some(stream), Some(wanted)) => events
                .iter()
                .filter(|(s, id, _)| *s == stream && *id > wanted)
                .map(|(_, id, event)| {
                    let mut event = event.clone();
                    event.event_id = Some(format!("e{id}"));
                    event
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(Box::pin(futures::stream::iter(later)))
    }
}
