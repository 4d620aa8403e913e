//! rmcp's side of the resuming stream: its retry policies, and its JSON-RPC
//! messages.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use rmcp_resume_core::reconnect::{
    Connector, ResumeConfig, ResumeStreamError, RetryPolicy, resuming_frames,
};
use rmcp_resume_core::resumption::StreamScope;
use sse_stream::Sse;

use super::{BoxedSseResponse, SseRetryPolicy};
use crate::model::ServerJsonRpcMessage;

/// rmcp's retry policy, as the core's.
#[derive(Debug)]
pub(crate) struct Policy(pub(crate) Arc<dyn SseRetryPolicy>);

impl RetryPolicy for Policy {
    fn retry(&self, failures: usize) -> Option<Duration> {
        self.0.retry(failures)
    }
}

/// The resuming stream of JSON-RPC messages: `first` is the stream already
/// open (a POST response or the first GET), `last_event_id` the cursor it
/// starts from.
pub fn resuming_sse_stream<R: Connector>(
    first: Option<BoxedSseResponse>,
    last_event_id: Option<String>,
    connector: R,
    scope: StreamScope,
    retry_policy: Arc<dyn SseRetryPolicy>,
    config: ResumeConfig,
) -> impl Stream<Item = Result<ServerJsonRpcMessage, ResumeStreamError<R::Error>>> + Send + 'static
{
    resuming_sse_frames(first, last_event_id, connector, scope, retry_policy, config).filter_map(
        |frame| async move {
            match frame {
                Err(error) => Some(Err(error)),
                Ok(sse) => {
                    let data = sse.data.filter(|d| !d.is_empty())?;
                    match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                        Ok(message) => Some(Ok(message)),
                        Err(error) => {
                            tracing::debug!(%error, id = ?sse.id, "ignoring a non-JSON-RPC SSE message");
                            None
                        }
                    }
                }
            }
        },
    )
}

/// The same stream as SSE frames, already judged (see
/// [`rmcp_resume_core::reconnect::resuming_frames`]).
pub fn resuming_sse_frames<R: Connector>(
    first: Option<BoxedSseResponse>,
    last_event_id: Option<String>,
    connector: R,
    scope: StreamScope,
    retry_policy: Arc<dyn SseRetryPolicy>,
    config: ResumeConfig,
) -> impl Stream<Item = Result<Sse, ResumeStreamError<R::Error>>> + Send + 'static {
    resuming_frames(
        first,
        last_event_id,
        connector,
        scope,
        Policy(retry_policy),
        config,
    )
}
