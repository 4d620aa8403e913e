//! [`ResumeGuard`]: the wrapper that takes every SSE stream the client opens
//! and makes its reconnect decisions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use http::{HeaderName, HeaderValue};
use sse_stream::Sse;

use super::connector::{GetConnector, lost_in_transit, opening_retryable, stream_span};
use super::held::{Held, Kept};
use super::{SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse};
use crate::line::HEADER_MCP_PROTOCOL_VERSION;
use crate::line::{self, ResponseLimits};
use crate::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use crate::transport::common::client_side_sse::{
    Attempt, Discontinuity, ResumeConfig, ResumeStreamError, SseRetryPolicy, StreamScope,
    resuming_sse_frames,
};
use crate::transport::common::client_side_sse::{BoxedSseResponse, SseReconnect};
use crate::transport::common::client_side_sse::{Policy, RESUME_FAILED_CODE, ResumeFailure};
use rmcp_resume_core::reconnect::{
    AnswerFrame, EarlyAnswer, answer_within, drain_answered, is_response, resend_handshake,
    resuming_frames_ending,
};

/// Why a request failed because its stream could not be resumed, or `None`
/// when `error` is anything else.
///
/// Such a request ends with [`ServiceError::McpError`](crate::ServiceError::McpError)
/// whose code is [`RESUME_FAILED_CODE`]; this reads the [`ResumeFailure`] back
/// out of its `data`.
pub fn resume_failure(error: &crate::ServiceError) -> Option<ResumeFailure> {
    match error {
        crate::ServiceError::McpError(data) => {
            ResumeFailure::from_error(data.code.0, data.data.as_ref())
        }
        _ => None,
    }
}

/// A [`StreamableHttpClient`] that owns the reconnect decisions of every SSE
/// stream the wrapped client opens.
#[derive(Clone)]
pub struct ResumeGuard<C> {
    inner: C,
    /// One allocation for what every stream of the session reads: each
    /// request clones the guard into its future, which upstream's worker
    /// then moves by value, so the guard is kept to two words and a client.
    shared: Arc<Shared>,
}

/// What a guard's streams share.
struct Shared {
    retry: Arc<dyn SseRetryPolicy>,
    resume: ResumeConfig,
    /// The session whose standalone stream gave up, so a caller that
    /// reconnects regardless gets a terminal answer instead of a new loop.
    gave_up: Mutex<Option<Arc<str>>>,
    /// The custom headers of the last request, kept for its resumes. Under
    /// the 2025 revisions a session's requests carry the same ones, so
    /// each request shares this copy instead of making its own. From
    /// 2026-07-28 upstream adds per-request headers (`Mcp-Method`, a tool's
    /// argument headers), and a request whose headers differ gets a copy of
    /// its own, as every request did before. The copy lives as long as the
    /// guard, as the standalone stream's connector keeps its headers for
    /// the session's life.
    headers: Mutex<Option<Headers>>,
    /// Streams a cancellation overtook while the guard waited for their
    /// answer, until the cancellation is sent.
    kept: Arc<Kept>,
}

/// Custom headers, shared between a request and its resumes.
type Headers = Arc<HashMap<HeaderName, HeaderValue>>;

/// Whether `a` and `b` hold the same headers, sensitivity included.
fn same_headers(
    a: &HashMap<HeaderName, HeaderValue>,
    b: &HashMap<HeaderName, HeaderValue>,
) -> bool {
    a.len() == b.len()
        && a.iter().all(|(name, value)| {
            b.get(name)
                .is_some_and(|other| other == value && other.is_sensitive() == value.is_sensitive())
        })
}

impl<C: std::fmt::Debug> std::fmt::Debug for ResumeGuard<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeGuard")
            .field("inner", &self.inner)
            .field("resume", &self.shared.resume)
            .finish_non_exhaustive()
    }
}

impl<C: StreamableHttpClient> ResumeGuard<C> {
    /// Guards `inner`, retrying with `retry` and judging with `resume`.
    pub fn new(inner: C, retry: Arc<dyn SseRetryPolicy>, resume: ResumeConfig) -> Self {
        Self {
            inner,
            shared: Arc::new(Shared {
                retry,
                resume,
                gave_up: Mutex::default(),
                headers: Mutex::default(),
                kept: Arc::default(),
            }),
        }
    }

    /// A shared copy of `headers` for a request's resumes: the last
    /// request's when they are the same.
    fn kept_headers(&self, headers: &HashMap<HeaderName, HeaderValue>) -> Headers {
        let Ok(mut kept) = self.shared.headers.lock() else {
            return Arc::new(headers.clone());
        };
        match kept.as_ref() {
            Some(last) if same_headers(last, headers) => last.clone(),
            _ => {
                let fresh = Arc::new(headers.clone());
                *kept = Some(fresh.clone());
                fresh
            }
        }
    }

    /// The wrapped client.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    fn connector(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
        request: Option<RequestId>,
    ) -> GetConnector<C> {
        GetConnector {
            client: self.inner.clone(),
            uri,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
            request,
        }
    }
}

/// The frame that fails `request` with `error`: the request ends with a
/// JSON-RPC error ([`RESUME_FAILED_CODE`], a [`ResumeFailure`] in its `data`)
/// instead of waiting for a response that will not come.
fn failure_frame<E: std::error::Error + Send + Sync + 'static>(
    request: &RequestId,
    error: &ResumeStreamError<StreamableHttpError<E>>,
    revision_resumes: bool,
) -> Sse {
    // Under a revision without resumption, a stream with no cursor, or a
    // resume the server refuses as such (`405` to the `GET`), is a request
    // lost with its stream; authentication failures stay what they are.
    let no_cursor = matches!(
        error,
        ResumeStreamError::Exhausted { last, .. } if matches!(**last, Attempt::NoCursor(_))
    ) || matches!(
        error,
        ResumeStreamError::Fatal(StreamableHttpError::ServerDoesNotSupportSse)
    );
    let error = if no_cursor && !revision_resumes {
        crate::model::ErrorData::new(
            crate::model::ErrorCode(RESUME_FAILED_CODE),
            format!(
                "{error}; this protocol revision has no resumption, so the request may have run and was not sent again"
            ),
            Some(ResumeFailure::not_resumable().to_data()),
        )
    } else {
        crate::model::ErrorData::new(
            crate::model::ErrorCode(RESUME_FAILED_CODE),
            format!("streamable HTTP resumption failed: {error}"),
            Some(ResumeFailure::of(error).to_data()),
        )
    };
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": request, "error": error });
    Sse {
        event: None,
        data: Some(body.to_string()),
        id: None,
        retry: None,
    }
}

/// A request's response stream: judged reconnects, then exactly one of the
/// response or a failure frame, then the end.
///
/// The resuming stream ends a request stream only after its response
/// (having read it to its end) or with an error; an error becomes the
/// request's JSON-RPC failure, and then the stream ends.
fn guard_request_stream<C, E>(
    first: BoxedSseResponse,
    connector: C,
    policy: Policy,
    config: ResumeConfig,
    request: RequestId,
    revision_resumes: bool,
    session: Option<Arc<str>>,
) -> BoxStream<'static, Result<Sse, SseError>>
where
    C: SseReconnect<Error = StreamableHttpError<E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    resuming_frames_ending(
        Some(first),
        None,
        connector,
        StreamScope::Request,
        policy,
        config,
        move |error| {
            let session_id = session.as_deref().unwrap_or("-");
            tracing::debug!(session_id, %request, %error, "request stream could not be resumed");
            failure_frame(&request, &error, revision_resumes)
        },
    )
    .map(Ok)
    .boxed()
}

/// What `sse` is to `request` waiting for its answer: upstream's worker
/// reads a message frame (no event type, or `message`) as a server message,
/// and skips one without data or with data that is not JSON. Only a
/// response or error naming `request` is its answer; anything else is left
/// to the worker's usual path, which handles it as it always has.
fn answer_frame(sse: &Sse, request: &RequestId) -> AnswerFrame<ServerJsonRpcMessage> {
    if !matches!(sse.event.as_deref(), None | Some("" | "message")) {
        return AnswerFrame::Other;
    }
    let Some(data) = sse.data.as_deref() else {
        return AnswerFrame::Skip;
    };
    if data.trim().is_empty() {
        return AnswerFrame::Skip;
    }
    // A notification or a server request is the worker's to parse: the
    // probe stops at its `method`, where a parse would read it whole.
    if !is_response(sse) {
        return AnswerFrame::Other;
    }
    let answers = |message: &ServerJsonRpcMessage| match message {
        JsonRpcMessage::Response(response) => response.id == *request,
        JsonRpcMessage::Error(error) => line::error_request_id(error).as_ref() == Some(request),
        _ => false,
    };
    match crate::line::parse_response(data) {
        Ok(message) if answers(&message) => AnswerFrame::Answer(message),
        _ => AnswerFrame::Other,
    }
}

/// Whether the request is sent under a revision with resumable streams (the
/// 2025 revisions; an absent header means 2025-03-26).
fn speaks_resumable_revision(headers: &HashMap<HeaderName, HeaderValue>) -> bool {
    let version = headers
        .iter()
        .find(|(name, _)| {
            name.as_str()
                .eq_ignore_ascii_case(HEADER_MCP_PROTOCOL_VERSION)
        })
        .and_then(|(_, value)| value.to_str().ok());
    // An unknown version is left to the server; the fork guards it.
    version.is_none_or(|v| {
        crate::line::known_version(v)
            .as_ref()
            .is_none_or(crate::line::has_initialize)
    })
}

/// `initialize`, or `notifications/initialized`: the messages without
/// which the client has no session at all.
fn is_handshake(message: &ClientJsonRpcMessage) -> bool {
    match message {
        JsonRpcMessage::Request(request) => {
            matches!(request.request, ClientRequest::InitializeRequest(_))
        }
        JsonRpcMessage::Notification(notification) => matches!(
            notification.notification,
            ClientNotification::InitializedNotification(_)
        ),
        _ => false,
    }
}

/// The request a `notifications/cancelled` names, if `message` is one.
fn cancelled_request(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Notification(notification) => match &notification.notification {
            ClientNotification::CancelledNotification(cancelled) => {
                line::cancelled_request(&cancelled.params)
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_subscription(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, JsonRpcMessage::Request(request) if crate::line::is_subscription(&request.request))
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

/// What a `POST` carries besides its message.
struct Envelope {
    endpoint: Arc<str>,
    sid: Option<Arc<str>>,
    bearer: Option<String>,
    /// For resumes and a resent handshake; the first `POST` takes the
    /// caller's own map.
    headers: Headers,
    limits: ResponseLimits,
}

impl Envelope {
    fn post<'a, C: StreamableHttpClient>(
        &self,
        client: &'a C,
        msg: ClientJsonRpcMessage,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult<C::Error>> + Send + use<'a, C> {
        line::post(
            client,
            self.endpoint.clone(),
            msg,
            self.sid.clone(),
            self.bearer.clone(),
            headers,
            self.limits,
        )
    }
}

type PostResult<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type GetResult<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;

// The trait's futures must be `Send` while `C` need not be `Sync`: each
// method starts the wrapped client's call (whose future the trait already
// requires to be `Send`) and moves an owned clone of the guard into the rest.
impl<C: StreamableHttpClient> ResumeGuard<C> {
    fn post_guarded(
        &self,
        endpoint: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: ResponseLimits,
    ) -> impl Future<Output = PostResult<C::Error>> + Send + '_ {
        let this = self.clone();
        // Revisions from 2026-07-28 have no resumption: a broken stream loses
        // the request by definition, and upstream reports it as such.
        // Every request stream is the guard's. Under a revision without
        // resumption (by its header) a stream that carries no event id
        // cannot be resumed, and its failure says so; one that does (a
        // server that negotiated less than the header claims) is resumed.
        // A subscription (2026-07-28) is not a call: upstream reports the
        // end of its stream itself (`SubscriptionEnd`).
        let resumable = speaks_resumable_revision(&headers);
        let request = request_id(&msg).filter(|_| !is_subscription(&msg));
        let event_limit = line::event_limit(&limits);
        // Boxed, as the resend below: only the handshake pays for it.
        let handshake = is_handshake(&msg).then(|| Box::new(msg.clone()));
        let cancelled = cancelled_request(&msg);
        let envelope = Envelope {
            endpoint,
            sid,
            bearer,
            headers: self.kept_headers(&headers),
            limits,
        };
        // Upstream's worker moves each call's future by value several times
        // per call, so its size is copied each time. `then` keeps the wrapped
        // client's future in place while it runs and the guard's rest after
        // it in the same bytes; an `async` block awaiting it would hold it
        // twice (its capture and its awaited copy). The rare handshake resend
        // (a second post, a sleep) is boxed for the same reason.
        envelope
            .post(&self.inner, msg, headers)
            .then(move |mut response| async move {
                if let Some(request) = &cancelled {
                    // Sent (or failed): the stream it names need not wait.
                    this.shared.kept.release(request);
                }
                if let Some(msg) = handshake {
                    response = Box::pin(
                        this.clone()
                            .resend_lost_handshake(&envelope, *msg, response),
                    )
                    .await;
                }
                let response = response?;
                // Only a request's stream carries a response to protect.
                let (request, stream, named) = match (request, response) {
                    (Some(request), StreamableHttpPostResponse::Sse(stream, named)) => {
                        (request, stream, named)
                    }
                    (_, response) => return Ok(response),
                };
                // Resumes use the session the server named in its answer, if any.
                let Envelope {
                    endpoint,
                    sid,
                    bearer,
                    headers,
                    ..
                } = envelope;
                let session = named.as_deref().map(Arc::from).or(sid);
                let connector = this.connector(
                    endpoint,
                    session.clone(),
                    bearer,
                    headers,
                    event_limit,
                    Some(request.clone()),
                );
                let answered = request.clone();
                let guarded = guard_request_stream(
                    stream,
                    connector,
                    Policy(this.shared.retry.clone()),
                    this.shared.resume.clone(),
                    request,
                    resumable,
                    session,
                );
                let wait = line::answer_wait(&this.shared.resume);
                if wait.is_zero() {
                    return Ok(StreamableHttpPostResponse::Sse(guarded, named));
                }
                let answer = |sse: &Sse| answer_frame(sse, &answered);
                // Dropped by the worker while it waits (a cancellation), the
                // stream stays open until the cancellation is sent, under
                // the revisions whose cancellation is a notification.
                let keep = resumable.then(|| (answered.clone(), this.shared.kept.clone()));
                Ok(
                    match answer_within(Held::new(guarded, keep), wait, answer).await {
                        EarlyAnswer::Answered(message, rest) => {
                            drain_answered(rest.into_frames());
                            StreamableHttpPostResponse::Json(message, named)
                        }
                        EarlyAnswer::Streaming(stream) => StreamableHttpPostResponse::Sse(
                            stream.map_rest(Held::into_frames).boxed(),
                            named,
                        ),
                    },
                )
            })
    }

    /// `response`, or while it is a loss in transit, the handshake message's
    /// answer when sent again ([`resend_handshake`] decides, and when). It
    /// owns its guard so that its future is `Send` while `C` is not `Sync`.
    async fn resend_lost_handshake(
        self,
        envelope: &Envelope,
        msg: ClientJsonRpcMessage,
        mut response: PostResult<C::Error>,
    ) -> PostResult<C::Error> {
        let policy = Policy(self.shared.retry.clone());
        let mut failures = 0;
        while let Err(error) = &response {
            if !lost_in_transit(error) {
                break;
            }
            failures += 1;
            let Some(delay) = resend_handshake(failures, &self.shared.resume, &policy) else {
                break;
            };
            tracing::debug!(%error, failures, ?delay, "handshake POST lost in transit; sending it again");
            tokio::time::sleep(delay).await;
            let headers = HashMap::clone(&envelope.headers);
            response = envelope.post(&self.inner, msg.clone(), headers).await;
        }
        response
    }

    /// A `POST` under the default response limits (upstream's
    /// `post_message`).
    pub(crate) fn post_default(
        &self,
        endpoint: Arc<str>,
        msg: ClientJsonRpcMessage,
        sid: Option<Arc<str>>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult<C::Error>> + Send + '_ {
        self.post_guarded(
            endpoint,
            msg,
            sid,
            bearer,
            headers,
            ResponseLimits::default(),
        )
    }

    /// A `GET` under the default response limits (upstream's `get_stream`).
    pub(crate) fn get_default(
        &self,
        endpoint: Arc<str>,
        sid: Option<Arc<str>>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = GetResult<C::Error>> + Send + '_ {
        let limit = line::event_limit(&ResponseLimits::default());
        self.get_guarded(endpoint, sid, cursor, bearer, headers, limit)
    }

    fn get_guarded(
        &self,
        endpoint: Arc<str>,
        sid: Option<Arc<str>>,
        cursor: Option<String>,
        bearer: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        event_limit: usize,
    ) -> impl Future<Output = GetResult<C::Error>> + Send + '_ {
        let this = self.clone();
        let gave_up = self
            .shared
            .gave_up
            .lock()
            .map(|g| g.clone())
            .unwrap_or_default();
        let refused = gave_up.is_some() && gave_up == sid;
        // Revisions from 2026-07-28 have no resumption and no standalone
        // stream; what upstream's worker asks for then is its own affair,
        // as with their POSTs.
        let guarded = speaks_resumable_revision(&headers);
        // The first connection's errors are upstream's to classify (401, 403
        // and 405 keep their meaning); reconnects after it are ours.
        let opening = line::get(
            &self.inner,
            endpoint.clone(),
            sid.clone(),
            cursor.clone(),
            bearer.clone(),
            headers.clone(),
            event_limit,
        );
        async move {
            if !guarded {
                return opening.await;
            }
            if refused {
                // This session's standalone stream already exhausted the
                // retry policy; answer as a server without SSE, which ends
                // the listener instead of starting another round.
                return Err(StreamableHttpError::ServerDoesNotSupportSse);
            }
            // Under a resumable revision every request stream is the
            // guard's, from its POST to its response or failure, so the
            // worker has none to reconnect: this is the standalone stream.
            let scope = StreamScope::Standalone;
            let parent = tracing::Span::current();
            let connector = this.connector(
                endpoint,
                sid.clone(),
                bearer,
                Arc::new(headers),
                event_limit,
                None,
            );
            let first = match opening.await {
                Ok(first) => Some(first),
                // A first GET lost in transit is the fork's to retry: handed
                // back, upstream's worker would never open the stream again,
                // and the session would get no server notification for life.
                Err(error) if opening_retryable(&connector, &error) => {
                    let session_id = sid.as_deref().unwrap_or("-");
                    tracing::debug!(session_id, %error, "first SSE GET failed; retrying it");
                    None
                }
                Err(error) => return Err(error),
            };
            let frames = resuming_sse_frames(
                first,
                cursor,
                connector,
                scope,
                this.shared.retry.clone(),
                this.shared.resume.clone(),
            );
            let shared = this.shared.clone();
            let frames = frames.filter_map(move |frame| {
                let outcome = match frame {
                    Ok(sse) => Some(Ok(sse)),
                    Err(error) => {
                        // Once per stream, and the application is told.
                        tracing::warn!(
                            parent: &stream_span(&parent, sid.as_ref(), scope, None),
                            %error,
                            "standalone SSE stream given up; no further server notifications"
                        );
                        if let Some(observer) = &shared.resume.on_discontinuity {
                            observer(&Discontinuity::given_up(error.to_string()));
                        }
                        if let Ok(mut slot) = shared.gave_up.lock() {
                            *slot = sid.clone();
                        }
                        None
                    }
                };
                futures::future::ready(outcome)
            });
            Ok(frames.boxed())
        }
    }
}

// Upstream's trait, whose methods differ per line; each forwards to the
// guarded calls above.
impl<C: StreamableHttpClient> StreamableHttpClient for ResumeGuard<C> {
    type Error = C::Error;

    // `post_message`, to `post_default`: its parameters differ per line.
    crate::line::post_message!();

    crate::line::with_response_limits! {
        fn post_message_with_max_sse_event_size(
            &self,
            endpoint: Arc<str>,
            msg: ClientJsonRpcMessage,
            sid: Option<Arc<str>>,
            bearer: Option<String>,
            headers: HashMap<HeaderName, HeaderValue>,
            event_limit: usize,
        ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
            let mut limits = ResponseLimits::default();
            limits.max_sse_event_size = event_limit;
            self.post_guarded(endpoint, msg, sid, bearer, headers, limits)
        }

        fn post_message_with_response_limits(
            &self,
            endpoint: Arc<str>,
            msg: ClientJsonRpcMessage,
            sid: Option<Arc<str>>,
            bearer: Option<String>,
            headers: HashMap<HeaderName, HeaderValue>,
            limits: ResponseLimits,
        ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
            self.post_guarded(endpoint, msg, sid, bearer, headers, limits)
        }
    }

    // `delete_session`, forwarded, and `get_stream`, to `get_default`: their
    // parameters differ per line.
    crate::line::delete_and_get_stream!();

    crate::line::with_response_limits! {
        fn get_stream_with_max_sse_event_size(
            &self,
            endpoint: Arc<str>,
            sid: Option<Arc<str>>,
            cursor: Option<String>,
            bearer: Option<String>,
            headers: HashMap<HeaderName, HeaderValue>,
            event_limit: usize,
        ) -> impl Future<Output = GetResult<Self::Error>> + Send + '_ {
            self.get_guarded(endpoint, sid, cursor, bearer, headers, event_limit)
        }
    }
}

#[cfg(test)]
mod tests;
