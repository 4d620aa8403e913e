//! [`TestServer`]: the one way the tests, benches and helper binaries start a
//! server.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use rmcp_resume_testkit::{Side, TestServer};
//!
//! // The fork, a 4-event replay window, no keep-alive comments.
//! let server = TestServer::new(Side::Fork).window(4).keep_alive(None).serve().await?;
//! println!("{}", server.url);
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, ReplaySessionManager,
};
#[cfg(not(rmcp_line_0_17))]
use rmcp::transport::streamable_http_server::session::store::SessionStore;
use rmcp::transport::streamable_http_server::tower::ResumeStats;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::DemoServer;
use crate::everything::Everything;
use crate::shapes::ShapesServer;
use crate::wedge::Wedged;

/// Which implementation a server (or a scenario) runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Upstream rmcp, of the line the testkit is compiled for (3.11.0, or
    /// 1.8.0 in `rmcp-resume-testkit-1`).
    Upstream,
    /// The overlay.
    Fork,
}

impl Side {
    /// Both sides, upstream first.
    pub const BOTH: [Side; 2] = [Side::Upstream, Side::Fork];

    /// `"upstream"` or `"fork"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Upstream => "upstream",
            Self::Fork => "fork",
        }
    }
}

/// The tools a test server offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tools {
    /// [`DemoServer`], sharing the builder's gate and signal.
    Demo,
    /// The conformance suite's everything server (fork only).
    Everything,
    /// [`ShapesServer`], the client peer matrix's tools.
    Shapes,
}

/// A test server, configured by its builder methods; every knob left alone
/// keeps the side's own default.
#[must_use]
pub struct TestServer {
    side: Side,
    tools: Tools,
    window: Option<usize>,
    retry: Option<Option<Duration>>,
    keep_alive: Option<Option<Duration>>,
    session_timers: bool,
    completed_ttl: Option<Duration>,
    max_completed_streams: Option<usize>,
    stall_timeout: Option<Duration>,
    replay_bytes: Option<(usize, usize)>,
    idle_session: Option<Duration>,
    wedged: bool,
    stateless: bool,
    #[cfg(not(rmcp_line_0_17))]
    session_store: Option<Arc<dyn SessionStore>>,
    #[cfg(not(rmcp_line_1))]
    event_store: Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>>,
    shared_log: Option<Arc<dyn rmcp_resume_core::shared::SharedLog>>,
    nodelay: bool,
    addr: SocketAddr,
    ct: CancellationToken,
    gate: Arc<Notify>,
    finished: Arc<Notify>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("side", &self.side)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// A server of `side` offering [`DemoServer`]'s tools, on 127.0.0.1:0.
    pub fn new(side: Side) -> Self {
        Self {
            side,
            tools: Tools::Demo,
            window: None,
            retry: None,
            keep_alive: None,
            session_timers: true,
            completed_ttl: None,
            max_completed_streams: None,
            stall_timeout: None,
            replay_bytes: None,
            idle_session: None,
            wedged: false,
            stateless: false,
            #[cfg(not(rmcp_line_0_17))]
            session_store: None,
            #[cfg(not(rmcp_line_1))]
            event_store: None,
            shared_log: None,
            nodelay: false,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            ct: CancellationToken::new(),
            gate: Arc::new(Notify::new()),
            finished: Arc::new(Notify::new()),
        }
    }

    /// The fork, offering the conformance suite's everything tools.
    pub fn everything() -> Self {
        Self {
            tools: Tools::Everything,
            ..Self::new(Side::Fork)
        }
    }

    /// A server of `side` offering [`ShapesServer`]'s tools (the client
    /// peer matrix's `quick`, `quiet`, `poll` and `stream`); `poll` closes
    /// its connection on the fork only.
    pub fn shapes(side: Side) -> Self {
        Self {
            tools: Tools::Shapes,
            ..Self::new(side)
        }
    }

    /// Events each stream retains: `SessionConfig::channel_capacity`, and on
    /// the fork also the hard cap, with no retention by time.
    pub fn window(self, events: usize) -> Self {
        Self {
            window: Some(events),
            ..self
        }
    }

    /// The SSE `retry` sent in priming events (`None`: none).
    pub fn retry(self, retry: Option<Duration>) -> Self {
        Self {
            retry: Some(retry),
            ..self
        }
    }

    /// The interval of SSE keep-alive comments (`None`: none).
    pub fn keep_alive(self, every: Option<Duration>) -> Self {
        Self {
            keep_alive: Some(every),
            ..self
        }
    }

    /// Turns off the session's idle and initialize timeouts, so tests on
    /// tokio's paused clock never see them fire.
    pub fn without_session_timers(self) -> Self {
        Self {
            session_timers: false,
            ..self
        }
    }

    /// How long an answered request stream stays resumable.
    pub fn completed_ttl(self, ttl: Duration) -> Self {
        Self {
            completed_ttl: Some(ttl),
            ..self
        }
    }

    /// Answered request streams kept resumable at once (fork only).
    pub fn max_completed_streams(self, streams: usize) -> Self {
        Self {
            max_completed_streams: Some(streams),
            ..self
        }
    }

    /// How long a reader may hold its stream back without reading (fork only).
    pub fn stall_timeout(self, stall: Duration) -> Self {
        Self {
            stall_timeout: Some(stall),
            ..self
        }
    }

    /// Byte budgets for replay: per session, and for all sessions (fork only).
    pub fn replay_bytes(self, session: usize, total: usize) -> Self {
        Self {
            replay_bytes: Some((session, total)),
            ..self
        }
    }

    /// Ends a session after this long without activity (its worker stops).
    pub fn idle_session(self, after: Duration) -> Self {
        Self {
            idle_session: Some(after),
            ..self
        }
    }

    /// Every resume of a live session fails inside the session manager, as
    /// in the original bug report (see [`Wedged`]); demo tools only.
    pub fn wedged_resumes(self) -> Self {
        Self {
            wedged: true,
            ..self
        }
    }

    /// No sessions at all (`legacy_session_mode` off): every request stands
    /// alone, and there are no streams to resume.
    pub fn stateless(self) -> Self {
        Self {
            stateless: true,
            ..self
        }
    }

    /// Keeps session state in `store`, so another server sharing it (another
    /// instance, or this one after a restart) restores the session (fork only).
    #[cfg(not(rmcp_line_0_17))]
    pub fn session_store(self, store: Arc<dyn SessionStore>) -> Self {
        Self {
            session_store: Some(store),
            ..self
        }
    }

    /// Sets `TCP_NODELAY` on accepted connections, as a latency-minded
    /// deployment would (`axum::serve` leaves it off).
    pub fn nodelay(self) -> Self {
        Self {
            nodelay: true,
            ..self
        }
    }

    /// Listens on `addr` instead of 127.0.0.1:0.
    pub fn at(self, addr: SocketAddr) -> Self {
        Self { addr, ..self }
    }

    /// Serves until `ct` is cancelled (the server's own token is a child).
    pub fn cancelled_by(self, ct: &CancellationToken) -> Self {
        Self {
            ct: ct.child_token(),
            ..self
        }
    }

    /// Opens the demo tools' gate (see [`DemoServer::with_gate`]).
    pub fn gate(&self) -> Arc<Notify> {
        self.gate.clone()
    }

    /// Notified when `work` (or `burst`) has produced everything.
    pub fn finished(&self) -> Arc<Notify> {
        self.finished.clone()
    }

    fn session_config(
        &self,
    ) -> rmcp::transport::streamable_http_server::session::local::SessionConfig {
        let mut session =
            rmcp::transport::streamable_http_server::session::local::SessionConfig::default();
        if let Some(window) = self.window {
            session.channel_capacity = window;
        }
        if let Some(after) = self.idle_session {
            session.keep_alive = Some(after);
        }
        if !self.session_timers {
            session.keep_alive = None;
        }
        session
    }

    /// The fork's settings, beside upstream's config (on 0.x they have no
    /// room in it).
    fn replay_settings(
        &self,
    ) -> rmcp::transport::streamable_http_server::session::local::ReplaySettings {
        let mut replay =
            rmcp::transport::streamable_http_server::session::local::ReplaySettings::default();
        let mut capacity = 0;
        self.apply_session(&mut capacity, &mut replay.completed_cache_ttl);
        if let Some(window) = self.window {
            // A strict count window, as upstream's: nothing kept for time.
            replay.max_replay_events = window;
            replay.replay_retention = Some(Duration::ZERO);
        }
        if let Some(streams) = self.max_completed_streams {
            replay.max_completed_streams = streams;
        }
        if let Some(stall) = self.stall_timeout {
            replay.reader_stall_timeout = stall;
        }
        if let Some((per_session, total)) = self.replay_bytes {
            replay.max_replay_bytes = per_session;
            replay.max_replay_bytes_total = total;
        }
        if !self.session_timers {
            replay.init_timeout = None;
        }
        replay
    }

    fn apply_session(&self, capacity: &mut usize, ttl: &mut Duration) {
        if let Some(window) = self.window {
            *capacity = window;
        }
        if let Some(completed_ttl) = self.completed_ttl {
            *ttl = completed_ttl;
        }
    }

    fn fork_config(&self) -> rmcp::transport::StreamableHttpServerConfig {
        // Fields, not `with_*`: 0.17's config has no builders.
        let mut config = crate::line::server_config(self.ct.clone());
        if let Some(retry) = self.retry {
            config.sse_retry = retry;
        }
        if let Some(keep_alive) = self.keep_alive {
            config.sse_keep_alive = keep_alive;
        }
        if self.stateless {
            config = crate::line::without_sessions(config);
        }
        #[cfg(not(rmcp_line_0_17))]
        {
            config.session_store = self.session_store.clone();
        }
        config
    }

    // On 0.x the manager is a plain two-field struct that clippy would
    // have built as a literal; on the later lines it is `#[non_exhaustive]`.
    // The fork's settings make it a `ReplaySessionManager` on 0.x (the
    // manager itself on the later lines).
    #[allow(clippy::field_reassign_with_default)]
    fn fork_manager(&self) -> Arc<ReplaySessionManager> {
        let mut manager = LocalSessionManager::default();
        manager.session_config = self.session_config();
        #[allow(unused_mut)]
        let mut manager = manager.with_replay_settings(self.replay_settings());
        #[cfg(not(rmcp_line_1))]
        if let Some(store) = &self.event_store {
            manager = manager.with_event_store(store.clone());
        }
        if let Some(shared) = &self.shared_log {
            manager = manager.with_shared_log(shared.clone());
        }
        Arc::new(manager)
    }

    /// The fork's sessions are shared with other instances through `shared`
    /// (a shared log, such as Redis).
    pub fn shared_log(self, shared: Arc<dyn rmcp_resume_core::shared::SharedLog>) -> Self {
        Self {
            shared_log: Some(shared),
            ..self
        }
    }

    /// The fork's session manager persists every event in `store`, which
    /// assigns ids and answers resumes (upstream's `EventStore` path).
    #[cfg(not(rmcp_line_1))]
    pub fn event_store(
        self,
        store: Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>,
    ) -> Self {
        Self {
            event_store: Some(store),
            ..self
        }
    }

    /// The fork's service for [`DemoServer`] and its session manager,
    /// without serving it (for in-process tests, or a router of the test's
    /// own).
    pub fn demo_service(
        &self,
    ) -> (
        StreamableHttpService<DemoServer, ReplaySessionManager>,
        Arc<ReplaySessionManager>,
    ) {
        let manager = self.fork_manager();
        (self.demo_service_over(manager.clone()), manager)
    }

    fn demo_service_over<M: SessionManager>(
        &self,
        manager: Arc<M>,
    ) -> StreamableHttpService<DemoServer, M> {
        let (gate, finished) = (self.gate.clone(), self.finished.clone());
        StreamableHttpService::new(
            move || Ok(DemoServer::with_signals(gate.clone(), finished.clone())),
            manager,
            self.fork_config(),
        )
    }

    /// The fork's service for the everything tools, and its session manager.
    pub fn everything_service(
        &self,
    ) -> (
        StreamableHttpService<Everything, ReplaySessionManager>,
        Arc<ReplaySessionManager>,
    ) {
        let manager = self.fork_manager();
        let handlers = manager.clone();
        let service = StreamableHttpService::new(
            move || Ok(Everything::new(handlers.clone())),
            manager.clone(),
            self.fork_config(),
        );
        (service, manager)
    }

    fn upstream_service<M: SessionManager>(
        &self,
        wrap: impl FnOnce(
            upstream::transport::streamable_http_server::session::local::LocalSessionManager,
        ) -> M,
    ) -> upstream::transport::StreamableHttpService<DemoServer, M> {
        let (gate, finished) = (self.gate.clone(), self.finished.clone());
        self.upstream_service_of(wrap, move || {
            DemoServer::with_signals(gate.clone(), finished.clone())
        })
    }

    fn upstream_service_of<H, M>(
        &self,
        wrap: impl FnOnce(
            upstream::transport::streamable_http_server::session::local::LocalSessionManager,
        ) -> M,
        handler: impl Fn() -> H + Send + Sync + 'static,
    ) -> upstream::transport::StreamableHttpService<H, M>
    where
        H: rmcp::ServerHandler + Send + 'static,
        M: SessionManager,
    {
        let mut manager =
            upstream::transport::streamable_http_server::session::local::LocalSessionManager::default();
        let session = &mut manager.session_config;
        // 0.17's sessions have neither a completed-stream cache nor an
        // initialize timeout.
        #[cfg(not(rmcp_line_0_17))]
        self.apply_session(
            &mut session.channel_capacity,
            &mut session.completed_cache_ttl,
        );
        #[cfg(rmcp_line_0_17)]
        {
            let mut no_cache = Duration::ZERO;
            self.apply_session(&mut session.channel_capacity, &mut no_cache);
        }
        if let Some(after) = self.idle_session {
            session.keep_alive = Some(after);
        }
        if !self.session_timers {
            session.keep_alive = None;
            #[cfg(not(rmcp_line_0_17))]
            {
                session.init_timeout = None;
            }
        }
        // Fields, not `with_*`: 0.17's config has no builders.
        let mut config = crate::line::server_config(self.ct.clone());
        if let Some(retry) = self.retry {
            config.sse_retry = retry;
        }
        if let Some(keep_alive) = self.keep_alive {
            config.sse_keep_alive = keep_alive;
        }
        upstream::transport::StreamableHttpService::new(
            move || Ok(handler()),
            Arc::new(wrap(manager)),
            config,
        )
    }

    /// Serves at `/mcp` until the server's token is cancelled (or the
    /// [`Served`] is dropped).
    pub async fn serve(self) -> std::io::Result<Served> {
        let (addr, fork) = match (self.side, self.tools) {
            (Side::Fork, Tools::Demo) if self.wedged => {
                let manager = self.fork_manager();
                let service = self.demo_service_over(Arc::new(Wedged::new(manager.clone())));
                let fork = Fork::new(&service, manager);
                (self.listen(service).await?, Some(fork))
            }
            (Side::Fork, Tools::Demo) => {
                let (service, manager) = self.demo_service();
                let fork = Fork::new(&service, manager);
                (self.listen(service).await?, Some(fork))
            }
            (Side::Fork, Tools::Everything) if self.wedged => {
                return Err(std::io::Error::other(
                    "wedged resumes are served with the demo tools only",
                ));
            }
            (Side::Fork, Tools::Everything) => {
                let (service, manager) = self.everything_service();
                let fork = Fork::new(&service, manager);
                (self.listen(service).await?, Some(fork))
            }
            (Side::Upstream, Tools::Demo) if self.wedged => {
                let service = self.upstream_service(|manager| Wedged::new(Arc::new(manager)));
                (self.listen(service).await?, None)
            }
            (Side::Upstream, Tools::Demo) => {
                let service = self.upstream_service(|manager| manager);
                (self.listen(service).await?, None)
            }
            (Side::Upstream, Tools::Everything) => {
                return Err(std::io::Error::other(
                    "the everything tools are served on the fork only",
                ));
            }
            (_, Tools::Shapes) if self.wedged => {
                return Err(std::io::Error::other(
                    "wedged resumes are served with the demo tools only",
                ));
            }
            (Side::Fork, Tools::Shapes) => {
                let manager = self.fork_manager();
                let sessions = manager.clone();
                let service = StreamableHttpService::new(
                    move || Ok(ShapesServer::polling(sessions.clone())),
                    manager.clone(),
                    self.fork_config(),
                );
                let fork = Fork::new(&service, manager);
                (self.listen(service).await?, Some(fork))
            }
            (Side::Upstream, Tools::Shapes) => {
                let service = self.upstream_service_of(|manager| manager, ShapesServer::new);
                (self.listen(service).await?, None)
            }
        };
        Ok(Served {
            addr,
            url: format!("http://{addr}/mcp"),
            gate: self.gate,
            finished: self.finished,
            ct: self.ct,
            fork,
            guard: true,
        })
    }

    async fn listen<S>(&self, service: S) -> std::io::Result<SocketAddr>
    where
        S: McpService,
        S::Future: Send + 'static,
    {
        use axum::serve::ListenerExt;
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(self.addr).await?;
        let bound = listener.local_addr()?;
        let nodelay = self.nodelay;
        let listener = listener.tap_io(move |tcp| {
            if nodelay {
                let _ = tcp.set_nodelay(true);
            }
        });
        let ct = self.ct.clone();
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router)
                .with_graceful_shutdown(ct.cancelled_owned())
                .await
            {
                tracing::error!(%error, "test server stopped");
            }
        });
        Ok(bound)
    }
}

/// What a test can reach of a fork server.
struct Fork {
    manager: Arc<ReplaySessionManager>,
    stats: Box<dyn Fn() -> ResumeStats + Send + Sync>,
}

impl Fork {
    fn new<H, M>(service: &StreamableHttpService<H, M>, manager: Arc<ReplaySessionManager>) -> Self
    where
        H: rmcp::ServerHandler + Send + 'static,
        M: SessionManager,
    {
        let service = service.clone();
        Self {
            manager,
            stats: Box::new(move || service.resume_stats()),
        }
    }
}

/// A running test server; dropping it stops the server.
#[non_exhaustive]
pub struct Served {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its MCP endpoint, `http://{addr}/mcp`.
    pub url: String,
    /// Opens the demo tools' gate.
    pub gate: Arc<Notify>,
    /// Notified when `work` (or `burst`) has produced everything.
    pub finished: Arc<Notify>,
    /// Stops the server.
    pub ct: CancellationToken,
    fork: Option<Fork>,
    /// Whether dropping this stops the server.
    guard: bool,
}

impl Served {
    /// How the fork's server answered resumes; `None` on upstream.
    pub fn resume_stats(&self) -> Option<ResumeStats> {
        self.fork.as_ref().map(|fork| (fork.stats)())
    }

    /// The fork's session manager; `None` on upstream.
    pub fn manager(&self) -> Option<&Arc<ReplaySessionManager>> {
        self.fork.as_ref().map(|fork| &fork.manager)
    }
}

impl Served {
    /// Lets the server outlive this value: it then runs until the token it
    /// was [`cancelled_by`](TestServer::cancelled_by) is cancelled. Returns
    /// its URL.
    pub fn into_url(mut self) -> String {
        self.guard = false;
        std::mem::take(&mut self.url)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.guard {
            self.ct.cancel();
        }
    }
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("url", &self.url)
            .field("fork", &self.fork.is_some())
            .finish_non_exhaustive()
    }
}

/// What a test server can serve: a streamable-HTTP tower service, upstream's
/// or the fork's.
pub trait McpService:
    tower_service::Service<
        axum::extract::Request,
        Response = axum::response::Response<
            http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>,
        >,
        Error = std::convert::Infallible,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> McpService for S where
    S: tower_service::Service<
            axum::extract::Request,
            Response = axum::response::Response<
                http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>,
            >,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static
{
}
