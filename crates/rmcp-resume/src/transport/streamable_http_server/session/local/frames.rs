//! A session's events as they leave its logs: their weight against the
//! budgets, their JSON for a shared log, and the stream a connection reads.

use futures::StreamExt;
use rmcp_resume_core::log::LogReader;
use rmcp_resume_core::shared::Gate;

use crate::line::EventStream;
use crate::transport::streamable_http_server::session::ServerSseMessage;

/// What a frame adds to an event's JSON (its `id:` and `data:` lines).
pub(super) const FRAME: usize = 32;

/// What an event weighs against the byte budgets: its JSON, plus what its
/// frame adds (the `id:` and `data:` lines).
pub(super) fn weigh(event: &ServerSseMessage) -> usize {
    /// Counts bytes instead of keeping them.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(FRAME);
    if let Some(message) = &event.message {
        // Writing to a counter cannot fail.
        let _ = serde_json::to_writer(&mut counter, message.as_ref());
    }
    counter.0
}

/// A reader's events as rmcp's SSE messages, each stamped with its id;
/// with a shared log, each waits for its commit first.
pub(super) fn events(reader: LogReader<ServerSseMessage>, gate: Option<Gate>) -> EventStream {
    let stamp = |logged: rmcp_resume_core::log::Logged<ServerSseMessage>| {
        let mut event = logged.event;
        event.event_id = Some(logged.id);
        event
    };
    match gate {
        None => Box::pin(reader.map(stamp)),
        Some(gate) => Box::pin(
            reader
                .then(move |logged| {
                    let gate = gate.clone();
                    async move { gate.committed(logged.index).await.then(|| stamp(logged)) }
                })
                .take_while(|event| std::future::ready(event.is_some()))
                .filter_map(std::future::ready),
        ),
    }
}

/// The JSON a shared log keeps of an event: its message, if it has one.
pub(super) fn data_of(event: &ServerSseMessage) -> Option<String> {
    let message = event.message.as_ref()?;
    serde_json::to_string(message.as_ref()).ok()
}
