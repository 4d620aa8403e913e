//! A reqwest client that says when its first `GET` has been answered, that
//! is, when the session's standalone stream is open. Everything else it
//! passes to reqwest's client unchanged.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::watch;

type Failure = StreamableHttpError<reqwest::Error>;
type PostResult = Result<StreamableHttpPostResponse, Failure>;
type GetResult = Result<BoxStream<'static, Result<Sse, SseError>>, Failure>;
type Headers = HashMap<HeaderName, HeaderValue>;
type Session = Option<Arc<str>>;

/// reqwest's client, watched for its first answered `GET`.
#[derive(Clone)]
pub struct FirstGet {
    inner: reqwest::Client,
    opened: Arc<watch::Sender<bool>>,
}

impl FirstGet {
    /// The client, and a receiver that turns `true` once a `GET` is answered.
    pub fn new(inner: reqwest::Client) -> (Self, watch::Receiver<bool>) {
        let (opened, seen) = watch::channel(false);
        let opened = Arc::new(opened);
        (Self { inner, opened }, seen)
    }

    fn mark(&self, result: GetResult) -> GetResult {
        if result.is_ok() {
            self.opened.send_replace(true);
        }
        result
    }
}

// Every method hands its arguments to reqwest's client in the same order; only
// the two `GET`s look at what comes back. The event-size `POST` is left to the
// trait's default: 3.11's transport sends through the response-limits `POST`,
// which this forwards, and only that method's default calls it.
impl StreamableHttpClient for FirstGet {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        to: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Session,
        auth: Option<String>,
        extra: Headers,
    ) -> PostResult {
        self.inner.post_message(to, msg, sid, auth, extra).await
    }

    async fn post_message_with_response_limits(
        &self,
        to: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Session,
        auth: Option<String>,
        extra: Headers,
        caps: StreamableHttpResponseLimits,
    ) -> PostResult {
        let post = self
            .inner
            .post_message_with_response_limits(to, msg, sid, auth, extra, caps);
        post.await
    }

    async fn delete_session(
        &self,
        to: Arc<str>,
        sid: Arc<str>,
        auth: Option<String>,
        extra: Headers,
    ) -> Result<(), Failure> {
        self.inner.delete_session(to, sid, auth, extra).await
    }

    async fn get_stream(
        &self,
        to: Arc<str>,
        sid: Session,
        cursor: Option<String>,
        auth: Option<String>,
        extra: Headers,
    ) -> GetResult {
        let got = self.inner.get_stream(to, sid, cursor, auth, extra).await;
        self.mark(got)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        to: Arc<str>,
        sid: Session,
        cursor: Option<String>,
        auth: Option<String>,
        extra: Headers,
        cap: usize,
    ) -> GetResult {
        let get = self
            .inner
            .get_stream_with_max_sse_event_size(to, sid, cursor, auth, extra, cap);
        self.mark(get.await)
    }
}
