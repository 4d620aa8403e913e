//! The streamable-HTTP tower service, with resumption that cannot loop.
//!
//! Same public API as upstream rmcp 3.11.0's `tower` module. The fork answers
//! every stateful `GET` itself and hands everything else (`POST`, stateless
//! and 2026-07-28 requests, session restore) to upstream's service, which it
//! wraps with the same configuration and session manager. What differs:
//!
//! - A `GET` with `Last-Event-ID` never gets `200` with an empty stream. Its
//!   answer is the core's [`plan`](crate::transport::resumption::plan())
//!   (decision table there); a malformed cursor gets `400`.
//! - Every resume response carries the replay floor in
//!   [`REPLAY_FLOOR_HEADER`](crate::transport::resumption::REPLAY_FLOOR_HEADER)
//!   and, as its first frame, a
//!   [`ReplayNotice`](crate::transport::resumption::ReplayNotice) event (type
//!   `mcp-replay`, no `id`), which peers that do not know it ignore.
//! - A fresh standalone stream's priming id precedes its first event.
//! - `DELETE` answers `200 OK` (upstream: `202`, which some peers log as a failure).
//! - Resume outcomes are counted ([`StreamableHttpService::resume_stats`]) and
//!   a failing resume warns at most once per session per minute.
//!
//! | File | Concern |
//! |---|---|
//! | `tower.rs` | the service, and which requests the fork answers itself |
//! | `stats.rs` | [`ResumeStats`], and the throttled warning |
//! | `get.rs` | a `GET`: fresh standalone stream, or a resume |
//! | `post.rs` | a `POST` on a shared log: never an empty `200` |
//! | `request.rs` | what is read from a `GET`'s headers |
//! | `responses.rs` | SSE bodies, refusals and errors |

use std::convert::Infallible;
use std::fmt::Display;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::combinators::BoxBody;

use super::session::SessionManager;
use super::session::local::LocalSessionManager;
use crate::transport::common::http_header::HEADER_LAST_EVENT_ID;

use upstream::transport::streamable_http_server::tower as up;

mod get;
mod post;
mod request;
mod responses;
mod shared;
mod stats;
#[cfg(test)]
mod tests;

pub use stats::ResumeStats;
/// Upstream's configuration, unchanged: the fork reads the same fields.
pub use up::StreamableHttpServerConfig;

use responses::BoxResponse;
use stats::Telemetry;

/// Serves MCP over streamable HTTP; a drop-in for upstream's service.
pub struct StreamableHttpService<S, M = LocalSessionManager> {
    /// The configuration the service was built with.
    pub config: StreamableHttpServerConfig,
    // Shared: axum clones the service for every request, and upstream's
    // clone copies its whole config; one copy per request is upstream's cost.
    inner: Arc<up::StreamableHttpService<S, M>>,
    session_manager: Arc<M>,
    telemetry: Arc<Telemetry>,
}

impl<S, M> Clone for StreamableHttpService<S, M> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            inner: self.inner.clone(),
            session_manager: self.session_manager.clone(),
            telemetry: self.telemetry.clone(),
        }
    }
}

impl<B, S, M> tower_service::Service<Request<B>> for StreamableHttpService<S, M>
where
    M: SessionManager,
    S: crate::fork::SessionService + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send + 'static,
    B::Error: Display,
{
    type Response = BoxResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if self.refuses_stateless_resume(&req) {
            return Box::pin(async { Ok(responses::stateless_resume()) });
        }
        if self.owns(req.method()) || self.checks_ownership(&req) {
            let service = self.clone();
            Box::pin(async move { Ok(service.handle(req).await) })
        } else {
            // Delegated traffic (every POST) takes only upstream's service,
            // without a second copy of the config's host and origin lists.
            let inner = self.inner.clone();
            Box::pin(async move { Ok(inner.handle(req).await) })
        }
    }

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
}

impl<S: crate::fork::SessionService + Send + 'static, M: SessionManager>
    StreamableHttpService<S, M>
{
    /// Builds the service; `service_factory` makes one handler per session.
    pub fn new(
        service_factory: impl Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
        session_manager: Arc<M>,
        config: StreamableHttpServerConfig,
    ) -> Self {
        let inner = up::StreamableHttpService::new(
            service_factory,
            session_manager.clone(),
            config.clone(),
        );
        Self {
            config,
            inner: Arc::new(inner),
            session_manager,
            telemetry: Arc::default(),
        }
    }

    /// How resumes have been answered so far.
    pub fn resume_stats(&self) -> ResumeStats {
        self.telemetry.stats()
    }

    /// Without sessions (a stateless server, or a revision that has none,
    /// 2026-07-28) there are no streams, so a resume cannot be answered
    /// (upstream: an empty `200`) unless an event store holds the events.
    fn refuses_stateless_resume<B>(&self, request: &Request<B>) -> bool {
        // Cheapest first: every `POST` passes here, and a header looked up
        // by a string name is parsed on each lookup.
        if request.method() != Method::GET || !request.headers().contains_key(HEADER_LAST_EVENT_ID)
        {
            return false;
        }
        let sessionless = !crate::line::session_mode(&self.config)
            || request::protocol_version(request.headers())
                .is_ok_and(|version| !crate::line::has_initialize(&version));
        sessionless && !crate::line::has_event_store(&*self.session_manager)
    }

    /// Whether a `POST` must first be checked against the session's owner
    /// in a shared log (fork-only).
    fn checks_ownership<B>(&self, request: &Request<B>) -> bool {
        request.method() == Method::POST
            && get::shared_log(self.session_manager.as_ref()).is_some()
            && request
                .headers()
                .contains_key(crate::transport::common::http_header::HEADER_SESSION_ID)
    }

    /// Whether the fork answers requests of `method` itself, rather than
    /// upstream's service.
    fn owns(&self, method: &Method) -> bool {
        crate::line::session_mode(&self.config)
            && (method == Method::GET || method == Method::DELETE)
    }

    /// Handles one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<BoxBody<Bytes, Infallible>>
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        if self.refuses_stateless_resume(&request) {
            return responses::stateless_resume();
        }
        if !self.owns(request.method()) {
            let mut hold = None;
            if let (true, Some(session), Some(shared)) = (
                request.method() == Method::POST,
                request::session_id(request.headers()),
                get::shared_log(self.session_manager.as_ref()),
            ) {
                // The head's deadline counts from the request's arrival:
                // a `503` comes within the outage limit however long the
                // commands in flight take to time out.
                let deadline = tokio::time::Instant::now() + shared.outage_limit();
                if let Some(refused) = self.owned_elsewhere(session).await {
                    return refused;
                }
                hold = Some((shared.renew_every(), deadline));
            }
            let response = self.inner.handle(request).await;
            return match hold {
                Some((retry, deadline)) => {
                    post::emptied_if_broken(post::hold_head(response, retry, deadline).await)
                }
                None => response,
            };
        }
        if request.method() == Method::GET {
            return self.handle_get(request).await;
        }
        self.handle_delete(request).await
    }

    /// `DELETE`: upstream's, except that an unknown (or already deleted)
    /// session is `404`, as the spec says, and success is `200`. With a
    /// session store, a session that is not live here but has a record
    /// (restorable here, or run by another instance) is deleted, record
    /// included; one with no record is unknown.
    async fn handle_delete<B>(&self, request: Request<B>) -> BoxResponse
    where
        B: Body + Send + 'static,
        B::Error: Display,
    {
        let session = request::session_id(request.headers());
        let legacy = request::protocol_version(request.headers())
            .is_ok_and(|version| crate::line::has_initialize(&version));
        let shared = get::shared_log(self.session_manager.as_ref());
        if let (Some(session), true) = (&session, legacy) {
            match self.session_manager.has_session(session).await {
                Ok(true) => {}
                Ok(false) => match crate::line::session_store(&self.config) {
                    None => match &shared {
                        Some(shared) if known(&**shared, session).await => {}
                        _ => return responses::not_found(),
                    },
                    Some(store) => match store.load(session.as_ref()).await {
                        Ok(Some(_)) => {}
                        Ok(None) => return responses::not_found(),
                        Err(error) => return responses::internal_error("load session", &error),
                    },
                },
                Err(error) => return responses::internal_error("check session", &error),
            }
        }
        let mut response = self.inner.handle(request).await;
        // Every peer SDK reads 200 as a successful termination; some log
        // upstream's 202 as a failure.
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        if response.status() == StatusCode::OK
            && let Some(session) = &session
        {
            self.telemetry.forget(session);
            // Only a `DELETE` forgets the session everywhere: the tombstone
            // stops its owner, wherever it runs.
            if let Some(shared) = &shared
                && let Err(error) = shared.delete(session).await
            {
                return responses::internal_error("delete the shared session", &error);
            }
        }
        response
    }
}

/// Whether the shared log knows `session` (an unreachable log counts as
/// knowing it: the `DELETE` then fails with the log's error).
async fn known(shared: &dyn rmcp_resume_core::shared::SharedLog, session: &str) -> bool {
    let standalone = crate::transport::resumption::StreamId::Standalone;
    !matches!(
        shared
            .read(session, standalone, u64::MAX, 1)
            .await
            .map(|s| s.lookup),
        Ok(crate::transport::resumption::StreamLookup::SessionLost)
    )
}
