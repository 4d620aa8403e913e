//! Which request stream a server message belongs to.
//!
//! A response (or error) goes to the stream of the request it answers, and
//! ends it; a progress notification to the stream of the request that gave
//! the token; a cancellation to the cancelled request's stream; a server
//! request made on behalf of a client request (SEP-2260) to that request's
//! stream. Everything else goes to the standalone stream.

use std::collections::HashMap;

use super::HttpRequestId;
use crate::model::{
    ClientJsonRpcMessage, ClientNotification, GetMeta, JsonRpcMessage, ProgressToken, RequestId,
    ServerJsonRpcMessage, ServerNotification,
};

/// What ties a server message to a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Route {
    Request(RequestId),
    Progress(ProgressToken),
}

/// Where a server message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Destination {
    /// The request stream, or `None` for the standalone stream.
    pub(super) stream: Option<HttpRequestId>,
    /// The message answers its request: the stream is complete after it.
    pub(super) completes: bool,
}

/// The session's routes to live request streams.
#[derive(Debug, Default)]
pub(super) struct Routes(HashMap<Route, HttpRequestId>);

impl Routes {
    fn by(&self, route: Route) -> Option<HttpRequestId> {
        self.0.get(&route).copied()
    }

    /// Where `message` goes.
    pub(super) fn destination(&self, message: &ServerJsonRpcMessage) -> Destination {
        let (stream, completes) = match message {
            JsonRpcMessage::Response(response) => {
                (self.by(Route::Request(response.id.clone())), true)
            }
            JsonRpcMessage::Error(error) => (
                crate::line::error_request_id(error).and_then(|id| self.by(Route::Request(id))),
                true,
            ),
            JsonRpcMessage::Notification(notification) => match &notification.notification {
                ServerNotification::ProgressNotification(progress) => (
                    self.by(Route::Progress(progress.params.progress_token.clone())),
                    false,
                ),
                ServerNotification::CancelledNotification(cancelled) => (
                    crate::line::cancelled_request(&cancelled.params)
                        .and_then(|id| self.by(Route::Request(id))),
                    false,
                ),
                _ => (None, false),
            },
            JsonRpcMessage::Request(request) => (
                crate::line::originating_request(&request.request)
                    .and_then(|origin| self.by(Route::Request(origin))),
                false,
            ),
        };
        Destination { stream, completes }
    }

    /// The routes a client request opens to its stream `m`.
    pub(super) fn register(
        &mut self,
        message: &ClientJsonRpcMessage,
        m: HttpRequestId,
    ) -> Vec<Route> {
        let JsonRpcMessage::Request(request) = message else {
            return Vec::new();
        };
        let mut routes = vec![Route::Request(request.id.clone())];
        if let Some(token) = request.request.get_meta().get_progress_token() {
            routes.push(Route::Progress(token));
        }
        for route in &routes {
            self.0.insert(route.clone(), m);
        }
        routes
    }

    /// The stream of the request a client's cancellation names.
    pub(super) fn cancelled(&self, message: &ClientJsonRpcMessage) -> Option<HttpRequestId> {
        if let JsonRpcMessage::Notification(notification) = message
            && let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            && let Some(request_id) = crate::line::cancelled_request(&cancelled.params)
        {
            return self.by(Route::Request(request_id));
        }
        None
    }

    /// The stream carrying `request_id`'s response.
    pub(super) fn request(&self, request_id: RequestId) -> Option<HttpRequestId> {
        self.by(Route::Request(request_id))
    }

    /// Forgets routes.
    pub(super) fn remove(&mut self, routes: impl IntoIterator<Item = Route>) {
        for route in routes {
            self.0.remove(&route);
        }
    }
}
