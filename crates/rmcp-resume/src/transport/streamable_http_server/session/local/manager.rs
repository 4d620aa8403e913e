//! The session table of one process.

use std::collections::HashMap;
use std::sync::Arc;

use futures::Stream;
use rmcp_resume_core::shared::{SharedLog, SharedLogError};

use super::incarnation::Incarnation;
use super::manager_state::ManagerState;
use super::worker::new_session;
use super::{
    EventId, EventIdParseError, ForkSessionError, LocalSessionHandle, ReplaySettings,
    ResumedStream, Resumption, SessionConfig, SessionError, SessionTransport,
};
use crate::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use crate::transport::WorkerTransport;
use crate::transport::common::server_side_http::{SessionId, session_id};
use crate::transport::resumption::{ResumeAnswer, RmcpEventId};
use crate::transport::streamable_http_server::session::{ServerSseMessage, SessionManager};
use rmcp_resume_core::shared::Mirror;

crate::line::with_store_field! {
/// Keeps every session of this process in memory.
#[derive(Debug, Default)]
// `#[non_exhaustive]` where upstream's is, and on 0.x upstream's two fields
// and no other, so that 0.x's literals compile (see `line`; the shared log
// and the replay meter ride in `session_config`).
pub struct LocalSessionManager {
    /// Live sessions by id.
    pub sessions: tokio::sync::RwLock<HashMap<SessionId, LocalSessionHandle>>,
    /// Configuration given to each new session.
    pub session_config: SessionConfig,
}
}

/// What a manager's sessions run with beside its `session_config`: the
/// fork's settings, and the state they share (shared log, replay meter).
struct Fork<'a> {
    replay: ReplaySettings,
    state: &'a ManagerState,
}

crate::line::with_fork_variants! {
upstream_non_exhaustive;
/// Errors of [`LocalSessionManager`].
///
/// On 0.x this is upstream's exact (exhaustive) enum: the fork's cases
/// (`OwnedElsewhere` and `Shared`, 1.8 and later) are each a
/// `SessionError(SessionError::Io(..))` whose `io::Error` wraps the
/// [`ForkSessionError`](super::ForkSessionError) of the same name.
#[derive(Debug, thiserror::Error)]
pub enum LocalSessionManagerError {
    /// The `Last-Event-ID` is not an event id of this server.
    #[error("Invalid event id: {0}")]
    InvalidEventId(#[from] EventIdParseError),
    /// No session with this id.
    #[error("Session not found: {0}")]
    SessionNotFound(SessionId),
    /// The session refused the operation.
    #[error("Session error: {0}")]
    SessionError(#[from] SessionError),
} + {
    /// Another instance owns the session: route its `POST`s there (fork-only).
    #[error("session {0} is owned by another instance")]
    OwnedElsewhere(SessionId),
    /// The shared log failed (fork-only).
    #[error("shared log: {0}")]
    Shared(#[from] SharedLogError),
}
}

crate::line::plain_0x! {
    {
        impl From<ForkSessionError> for LocalSessionManagerError {
            fn from(value: ForkSessionError) -> Self {
                Self::SessionError(value.into())
            }
        }

        impl From<SharedLogError> for LocalSessionManagerError {
            fn from(value: SharedLogError) -> Self {
                ForkSessionError::Shared(value).into()
            }
        }
    } else {
        impl From<ForkSessionError> for LocalSessionManagerError {
            fn from(value: ForkSessionError) -> Self {
                match value {
                    ForkSessionError::OwnedElsewhere(id) => Self::OwnedElsewhere(id),
                    ForkSessionError::Shared(error) => Self::Shared(error),
                    other => Self::SessionError(other.into()),
                }
            }
        }
    }
}

impl LocalSessionManager {
    crate::line::with_event_store! {
        /// Persists every event in `event_store`, which then assigns event ids and
        /// answers resumes.
        pub fn with_event_store(
            self,
            event_store: Arc<dyn crate::transport::streamable_http_server::session::EventStore>,
        ) -> Self {
            Self {
                event_store: self.event_store.with_store(event_store),
                ..self
            }
        }

        /// Keys the MAC that binds each event id on the event-store path to its
        /// session and store id (fork-only). A resume's `Last-Event-ID` reaches
        /// the store only if its MAC verifies for the requesting session;
        /// anything else is answered as a cursor the store does not know.
        ///
        /// Without this, the key is random and drawn once per process, so a
        /// cursor issued by another process (another instance, or this one
        /// before a restart) is refused like an unknown one. Instances that
        /// share an event store and a session store, and so restore each
        /// other's sessions, give all of them the same 32 random bytes (from a
        /// secret manager, never from the code). Replacing the secret refuses
        /// every cursor issued under the old one, the same way.
        pub fn with_event_id_secret(self, secret: [u8; 32]) -> Self {
            Self {
                event_store: self.event_store.with_secret(&secret),
                ..self
            }
        }
    }

    crate::line::plain_0x! {
        {
            /// Shares every session's streams with other instances through
            /// `shared` (fork-only): each event is committed there before it
            /// is sent, a session is owned by one instance at a time, and any
            /// instance answers a resume from it. See docs/redis.md in the
            /// repository. On 0.x, whose manager has room for nothing but
            /// upstream's two fields, this returns a
            /// [`ReplaySessionManager`] that holds the log beside this
            /// manager (on 1.8 and later, that is this manager).
            pub fn with_shared_log(self, shared: Arc<dyn SharedLog>) -> ReplaySessionManager {
                ReplaySessionManager::from(self).with_shared_log(shared)
            }

            /// Runs every session with the fork's `replay` settings
            /// (fork-only). On 0.x this returns a [`ReplaySessionManager`]
            /// that holds them, and its own replay meter, beside this
            /// manager (on 1.8 and later, that is this manager).
            pub fn with_replay_settings(self, replay: ReplaySettings) -> ReplaySessionManager {
                ReplaySessionManager::from(self).with_replay_settings(replay)
            }

            /// What this manager's sessions share: on 0.x one state per
            /// process for every manager built without
            /// [`with_replay_settings`](Self::with_replay_settings) (so one
            /// replay meter, and no shared log).
            fn state(&self) -> &ManagerState {
                ManagerState::process()
            }
        } else {
            /// Shares every session's streams with other instances through
            /// `shared` (fork-only): each event is committed there before it
            /// is sent, a session is owned by one instance at a time, and any
            /// instance answers a resume from it. See docs/redis.md in the
            /// repository. The log is kept in `session_config`: replacing that
            /// whole config afterwards drops it (set its fields instead).
            pub fn with_shared_log(mut self, shared: Arc<dyn SharedLog>) -> Self {
                let state = std::mem::take(&mut self.session_config.__manager);
                self.session_config.__manager = state.with_shared(shared);
                self
            }

            /// Runs every session with the fork's `replay` settings
            /// (fork-only): sets `session_config`'s fields of the same names.
            pub fn with_replay_settings(mut self, replay: ReplaySettings) -> Self {
                self.session_config.set_replay_settings(replay);
                self
            }

            /// What this manager's sessions share.
            fn state(&self) -> &ManagerState {
                &self.session_config.__manager
            }

            /// The manager itself (on 0.x, what a [`ReplaySessionManager`]
            /// holds).
            pub(crate) fn local(&self) -> &Self {
                self
            }
        }
    }

    /// The shared log, if sessions are shared (fork-only).
    pub fn shared_log(&self) -> Option<Arc<dyn SharedLog>> {
        self.state().shared().cloned()
    }

    /// Bytes all sessions keep for replay now (fork-only).
    pub fn replay_bytes(&self) -> usize {
        self.state().used()
    }

    /// What this manager's sessions run with beside `session_config`.
    fn fork(&self) -> Fork<'_> {
        Fork {
            replay: self.session_config.replay_settings(),
            state: self.state(),
        }
    }

    /// The session's handle, if the session is live. A session whose worker
    /// has stopped (an idle or initialize timeout, a crash) is forgotten
    /// here, so that every path answers it as unknown (`404`).
    pub async fn handle(&self, id: &SessionId) -> Option<LocalSessionHandle> {
        self.present(id)
            .await
            .filter(LocalSessionHandle::is_published)
    }

    /// The session's handle while its worker runs, published or not: a
    /// restored session is published only once its handshake is replayed,
    /// and that replay itself comes through here.
    async fn present(&self, id: &SessionId) -> Option<LocalSessionHandle> {
        let handle = self.sessions.read().await.get(id).cloned()?;
        if handle.is_live() {
            return Some(handle);
        }
        let mut sessions = self.sessions.write().await;
        if sessions.get(id).is_some_and(|h| !h.is_live()) {
            sessions.remove(id);
            tracing::debug!(session_id = %id, "forgot a session whose worker stopped");
        }
        None
    }

    async fn live(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        self.handle(id)
            .await
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }

    fn spawn_session(
        &self,
        fork: &Fork<'_>,
        id: SessionId,
        incarnation: Incarnation,
        mirror: Option<Mirror>,
    ) -> (LocalSessionHandle, SessionTransport) {
        let process = fork.state.meter(fork.replay.max_replay_bytes_total);
        let (handle, worker) = new_session(
            id,
            self.session_config.clone(),
            fork.replay.clone(),
            crate::line::store_of!(self),
            incarnation,
            Some(process),
            mirror,
        );
        (handle, WorkerTransport::spawn(worker))
    }

    /// Takes the session's lease in the shared log, if there is one: `Ok(None)`
    /// without a shared log; an error when another instance owns it.
    async fn take_ownership(
        &self,
        state: &ManagerState,
        id: &SessionId,
        create: bool,
    ) -> Result<Option<(Mirror, u64)>, LocalSessionManagerError> {
        let Some(shared) = state.shared() else {
            return Ok(None);
        };
        let mirror = match Mirror::start(shared.clone(), id.clone(), create).await? {
            Ok(mirror) => mirror,
            Err(rmcp_resume_core::shared::Ownership::HeldElsewhere) => {
                return Err(ForkSessionError::OwnedElsewhere(id.clone()).into());
            }
            Err(_) => return Err(LocalSessionManagerError::SessionNotFound(id.clone())),
        };
        let standalone = crate::transport::resumption::StreamId::Standalone;
        let head = match shared.read(id, standalone, u64::MAX, 1).await?.lookup {
            crate::transport::resumption::StreamLookup::Found(view) => view.head,
            _ => 1,
        };
        mirror.standalone_from(head);
        Ok(Some((mirror, head)))
    }

    /// Whether resumes are answered from an event store.
    #[cfg(not(feature = "local"))]
    pub(crate) fn has_event_store(&self) -> bool {
        crate::line::store_of!(self).is_set()
    }

    /// Decides a resume of `cursor` on session `id` (fork-only): the
    /// [`plan`](crate::transport::resumption::plan())'s answer, with the
    /// stream when it has one. An unknown session is
    /// [`ResumeAnswer::SessionLost`], not an error.
    pub async fn plan_resume(
        &self,
        id: &SessionId,
        cursor: RmcpEventId,
    ) -> Result<Resumption, LocalSessionManagerError> {
        let Some(handle) = self.handle(id).await else {
            return Ok(Resumption::refused(cursor, ResumeAnswer::SessionLost));
        };
        let event_id = EventId::try_from(cursor).map_err(|_| {
            let id = cursor.to_string();
            let cause = crate::transport::resumption::CursorParseError::Overflow { id: id.clone() };
            EventIdParseError::malformed(&id, cause)
        })?;
        Ok(handle.plan_resume(event_id).await?)
    }

    /// Resumes `cursor` on session `id`, saying what the replay covers
    /// (fork-only).
    pub async fn resume_with_notice(
        &self,
        id: &SessionId,
        cursor: &str,
    ) -> Result<ResumedStream, LocalSessionManagerError> {
        crate::line::with_event_store! {
            if self.event_store.is_set() {
                return self.resume_from_store(id, cursor).await;
            }
        }
        let event_id: EventId = cursor.parse()?;
        Ok(self.live(id).await?.resume_with_notice(event_id).await?)
    }
}

crate::line::with_event_store! {
    impl LocalSessionManager {
        /// A resume answered by the event store. The store's answer proves
        /// nothing about what it no longer holds, so the notice claims no
        /// completeness, and a replay that is over before its first event (an
        /// unknown, evicted or drained cursor: the store cannot say which) is
        /// refused rather than answered with an empty `200`. A cursor whose MAC
        /// does not verify for this session never reaches the store and gets
        /// that same refusal, so a forged, foreign or other session's cursor is
        /// indistinguishable from an unknown one.
        async fn resume_from_store(
            &self,
            id: &SessionId,
            cursor: &str,
        ) -> Result<ResumedStream, LocalSessionManagerError> {
            let parsed = crate::transport::resumption::EventCursor::parse(cursor)
                .map_err(EventIdParseError::Malformed)?;
            let Some(store_id) = self.event_store.key().unscope(id, cursor) else {
                tracing::debug!(
                    session_id = %id,
                    "event-store cursor not issued to this session under this key"
                );
                return Err(SessionError::StoreHasNothingAfter.into());
            };
            let Some(replayed) = self.event_store.replay_after(&store_id).await else {
                return Err(SessionError::InvalidEventId.into());
            };
            let mut stream = replayed.map_err(SessionError::EventStore)?;
            let Some(first) = futures::StreamExt::next(&mut stream).await else {
                return Err(SessionError::StoreHasNothingAfter.into());
            };
            let (session, key) = (id.clone(), self.event_store.key().clone());
            let stream = futures::StreamExt::map(
                futures::StreamExt::chain(futures::stream::once(std::future::ready(first)), stream),
                move |mut event: ServerSseMessage| {
                    event.event_id = event
                        .event_id
                        .map(|store_id| key.scoped(&session, &store_id));
                    event
                },
            );
            Ok(ResumedStream {
                notice: crate::transport::resumption::ReplayNotice {
                    cursor: parsed,
                    floor: None,
                    complete: false,
                    next: None,
                },
                stream: Box::pin(stream),
            })
        }
    }
}

impl LocalSessionManager {
    /// Upstream's `create_session`, its sessions run with `fork`.
    async fn create_with(
        &self,
        fork: Fork<'_>,
    ) -> Result<(SessionId, SessionTransport), LocalSessionManagerError> {
        let id = session_id();
        let mirror = self
            .take_ownership(fork.state, &id, true)
            .await?
            .map(|(mirror, _)| mirror);
        let (handle, transport) = self.spawn_session(&fork, id.clone(), Incarnation::First, mirror);
        self.sessions.write().await.insert(id.clone(), handle);
        Ok((id, transport))
    }
}

impl SessionManager for LocalSessionManager {
    type Error = LocalSessionManagerError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.create_with(self.fork()).await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let handle = self
            .present(id)
            .await
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        Ok(handle.initialize(message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.handle(id).await.is_some())
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // Upstream calls this whenever a session's service ends here (an
        // idle timeout, a takeover elsewhere), not only for a `DELETE`: the
        // shared log forgets a session only on a `DELETE` (see the tower).
        let removed = self.sessions.write().await.remove(id);
        if let Some(handle) = removed {
            match handle.close().await {
                Ok(()) | Err(SessionError::SessionServiceTerminated) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let handle = self.live(id).await?;
        Ok(handle.open_request(message).await?.stream)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        // A restore's `initialized` notification reaches the session before
        // it is published; it is what publishes it.
        let handle = self
            .present(id)
            .await
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        handle.push_message(message, None).await?;
        handle.publish();
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.live(id).await?.open_standalone_stream().await?.stream)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Through upstream's trait a caller cannot see the notice; a cursor
        // that is not covered is an error here, never a silent partial replay.
        let resumed = self.resume_with_notice(id, &last_event_id).await?;
        // An event store's replay is what the store holds; it never proves
        // completeness, and an empty one was refused above.
        if !resumed.notice.complete && !crate::line::store_of!(self).is_set() {
            return Err(SessionError::InvalidEventId.into());
        }
        Ok(resumed.stream)
    }

    crate::line::with_session_store! {
        async fn restore_session(
            &self,
            id: SessionId,
        ) -> Result<crate::transport::streamable_http_server::session::RestoreOutcome<Self::Transport>, Self::Error> {
            if self.present(&id).await.is_some() {
                return Ok(crate::transport::streamable_http_server::session::RestoreOutcome::AlreadyPresent);
            }
            // The shared log is asked without the table locked; upstream runs
            // one restore per id at a time, and the insert below re-checks.
            let fork = self.fork();
            let (incarnation, mirror) = match self.take_ownership(fork.state, &id, false).await? {
                Some((mirror, standalone_head)) => {
                    (Incarnation::Shared { standalone_head }, Some(mirror))
                }
                None => (Incarnation::Restored, None),
            };
            let mut sessions = self.sessions.write().await;
            if sessions.get(&id).is_some_and(LocalSessionHandle::is_live) {
                return Ok(crate::transport::streamable_http_server::session::RestoreOutcome::AlreadyPresent);
            }
            let (handle, transport) = self.spawn_session(&fork, id.clone(), incarnation, mirror);
            sessions.insert(id, handle);
            Ok(crate::transport::streamable_http_server::session::RestoreOutcome::Restored(transport))
        }
    }

    crate::line::with_event_store! {
        fn event_store(
            &self,
        ) -> Option<Arc<dyn crate::transport::streamable_http_server::session::EventStore>> {
            self.event_store.get()
        }
    }
}

crate::line::plain_0x! {
    {
        /// A [`LocalSessionManager`] with the fork's settings, and a shared
        /// log and a replay meter of its own (fork-only).
        ///
        /// 0.x's `LocalSessionManager` is upstream's two fields and nothing
        /// else, so that applications' literals compile; it has no room for
        /// the fork's settings. [`LocalSessionManager::with_replay_settings`]
        /// and [`LocalSessionManager::with_shared_log`] return this, which
        /// holds them beside the manager. It derefs to that manager
        /// (`sessions`, `session_config`, its methods) and is a
        /// [`SessionManager`] itself, so `Arc::new(manager.with_shared_log(log))`
        /// serves as before. On 1.8 and later this is `LocalSessionManager`.
        #[derive(Debug, Default)]
        pub struct ReplaySessionManager {
            local: LocalSessionManager,
            replay: ReplaySettings,
            state: ManagerState,
        }

        impl From<LocalSessionManager> for ReplaySessionManager {
            fn from(local: LocalSessionManager) -> Self {
                Self {
                    local,
                    replay: ReplaySettings::default(),
                    state: ManagerState::default(),
                }
            }
        }

        impl std::ops::Deref for ReplaySessionManager {
            type Target = LocalSessionManager;

            fn deref(&self) -> &LocalSessionManager {
                &self.local
            }
        }

        impl std::ops::DerefMut for ReplaySessionManager {
            fn deref_mut(&mut self) -> &mut LocalSessionManager {
                &mut self.local
            }
        }

        impl ReplaySessionManager {
            /// Runs every session with `replay`.
            pub fn with_replay_settings(self, replay: ReplaySettings) -> Self {
                Self { replay, ..self }
            }

            /// Shares every session's streams through `shared`, as
            /// [`LocalSessionManager::with_shared_log`] says.
            pub fn with_shared_log(self, shared: Arc<dyn SharedLog>) -> Self {
                Self {
                    state: self.state.with_shared(shared),
                    ..self
                }
            }

            /// The fork's settings its sessions run with.
            pub fn replay_settings(&self) -> &ReplaySettings {
                &self.replay
            }

            /// The shared log, if sessions are shared.
            pub fn shared_log(&self) -> Option<Arc<dyn SharedLog>> {
                self.state.shared().cloned()
            }

            /// Bytes its sessions keep for replay now.
            pub fn replay_bytes(&self) -> usize {
                self.state.used()
            }

            /// The manager it holds.
            pub(crate) fn local(&self) -> &LocalSessionManager {
                &self.local
            }

            fn fork(&self) -> Fork<'_> {
                Fork {
                    replay: self.replay.clone(),
                    state: &self.state,
                }
            }
        }

        impl SessionManager for ReplaySessionManager {
            type Error = LocalSessionManagerError;
            type Transport = SessionTransport;

            async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
                self.local.create_with(self.fork()).await
            }

            async fn initialize_session(
                &self,
                id: &SessionId,
                message: ClientJsonRpcMessage,
            ) -> Result<ServerJsonRpcMessage, Self::Error> {
                self.local.initialize_session(id, message).await
            }

            async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
                self.local.has_session(id).await
            }

            async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
                self.local.close_session(id).await
            }

            async fn create_stream(
                &self,
                id: &SessionId,
                message: ClientJsonRpcMessage,
            ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
            {
                self.local.create_stream(id, message).await
            }

            async fn accept_message(
                &self,
                id: &SessionId,
                message: ClientJsonRpcMessage,
            ) -> Result<(), Self::Error> {
                self.local.accept_message(id, message).await
            }

            async fn create_standalone_stream(
                &self,
                id: &SessionId,
            ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
            {
                self.local.create_standalone_stream(id).await
            }

            async fn resume(
                &self,
                id: &SessionId,
                last_event_id: String,
            ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
            {
                self.local.resume(id, last_event_id).await
            }
        }
    } else {
        /// The fork's manager with its settings and shared log
        /// (fork-only): on 0.x a type of its own, since 0.x's
        /// `LocalSessionManager` has room for upstream's two fields only;
        /// here `LocalSessionManager` itself, so that code naming it
        /// compiles on every line.
        pub type ReplaySessionManager = LocalSessionManager;
    }
}
