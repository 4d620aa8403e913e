//! The demo tool server: one small MCP server written exactly as an
//! application written against upstream rmcp would be (`#[tool_router]`,
//! `#[tool]`, `#[tool_handler]`), with tools that let a test decide when a
//! response exists.

use std::sync::Arc;

use rmcp::{
    Peer, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::ServerCapabilities,
    schemars, tool, tool_handler, tool_router,
};
use tokio::sync::Notify;

use crate::line::{RequestMetaObject, ServerConfig};

/// Arguments of the `sum` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SumArgs {
    /// Left operand.
    pub a: i64,
    /// Right operand.
    pub b: i64,
}

/// Arguments of the `echo` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text returned verbatim.
    pub text: String,
}

/// Arguments of the `work` and `announce` tools.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct CountArgs {
    /// How many progress steps, or notifications.
    pub count: u32,
}

/// Arguments of the `flood` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct FloodArgs {
    /// How many notifications.
    pub count: u32,
    /// Bytes of padding in each.
    pub size: u32,
}

/// Arguments of the `stream` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct StreamArgs {
    /// How many progress notifications.
    pub count: u32,
    /// Milliseconds between them.
    pub interval_ms: u64,
}

/// A tiny tool server used by the examples and the tests.
#[derive(Debug, Clone)]
pub struct DemoServer {
    tool_router: ToolRouter<Self>,
    gate: Arc<Notify>,
    finished: Arc<Notify>,
}

impl Default for DemoServer {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router]
impl DemoServer {
    /// A server with every tool registered.
    pub fn new() -> Self {
        Self::with_gate(Arc::new(Notify::new()))
    }

    /// A server whose `work` tool finishes only when `gate` is notified, so a
    /// test decides when a response is produced (for example, while the
    /// client is disconnected).
    pub fn with_gate(gate: Arc<Notify>) -> Self {
        Self::with_signals(gate, Arc::new(Notify::new()))
    }

    /// Like [`DemoServer::with_gate`]; `finished` is notified when `work`
    /// returns, so a test knows the response exists.
    pub fn with_signals(gate: Arc<Notify>, finished: Arc<Notify>) -> Self {
        Self {
            tool_router: Self::tool_router(),
            gate,
            finished,
        }
    }

    #[tool(description = "Report `count` progress steps, then finish when the server's gate opens")]
    async fn work(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(CountArgs { count }): Parameters<CountArgs>,
    ) -> String {
        if let Some(token) = meta.get_progress_token() {
            for step in 1..=count {
                let param = crate::line::progress(token.clone(), f64::from(step), f64::from(count));
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        }
        self.gate.notified().await;
        self.finished.notify_one();
        format!("finished {count} steps")
    }

    #[tool(
        description = "Report one progress step, wait for the gate, report the rest, wait for the gate again, finish"
    )]
    async fn burst(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(CountArgs { count }): Parameters<CountArgs>,
    ) -> String {
        let token = meta.get_progress_token();
        for step in 1..=count {
            if let Some(token) = &token {
                let param = crate::line::progress(token.clone(), f64::from(step), f64::from(count));
                let _ = peer.notify_progress(param).await;
            }
            if step == 1 {
                self.gate.notified().await;
            }
        }
        // Everything is emitted; the response waits for a second opening so
        // a test can resume before it exists.
        self.finished.notify_one();
        self.gate.notified().await;
        format!("burst of {count}")
    }

    #[tool(description = "Send `count` tools/list_changed notifications on the standalone stream")]
    async fn announce(
        &self,
        peer: Peer<RoleServer>,
        Parameters(CountArgs { count }): Parameters<CountArgs>,
    ) -> String {
        let mut sent = 0;
        for _ in 0..count {
            if peer.notify_tool_list_changed().await.is_ok() {
                sent += 1;
            }
        }
        format!("announced {sent}")
    }

    #[tool(
        description = "Send `count` resources/updated notifications of about `size` bytes each on the standalone stream"
    )]
    async fn flood(
        &self,
        peer: Peer<RoleServer>,
        Parameters(FloodArgs { count, size }): Parameters<FloodArgs>,
    ) -> String {
        let uri = format!("test://flood/{}", "x".repeat(size as usize));
        let mut sent = 0;
        for _ in 0..count {
            let param = crate::line::resource_updated(uri.clone());
            if peer.notify_resource_updated(param).await.is_ok() {
                sent += 1;
            }
        }
        format!("flooded {sent}")
    }

    #[tool(description = "Report `count` progress steps, `interval_ms` apart, then finish")]
    async fn stream(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        Parameters(StreamArgs { count, interval_ms }): Parameters<StreamArgs>,
    ) -> String {
        if let Some(token) = meta.get_progress_token() {
            for step in 1..=count {
                // Zero means back to back: a zero sleep still waits a timer tick.
                if interval_ms > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(interval_ms)).await;
                }
                let param = crate::line::progress(token.clone(), f64::from(step), f64::from(count));
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        }
        format!("streamed {count}")
    }

    #[tool(
        description = "Send `count` resources/updated notifications `tick://1`, `tick://2`, … `interval_ms` apart on the standalone stream, from a task of their own; returns at once"
    )]
    fn tick(
        &self,
        peer: Peer<RoleServer>,
        Parameters(StreamArgs { count, interval_ms }): Parameters<StreamArgs>,
    ) -> String {
        spawn_ticks(peer, count, interval_ms);
        format!("ticking {count}")
    }

    #[tool(description = "Add two integers")]
    fn sum(&self, Parameters(SumArgs { a, b }): Parameters<SumArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Return the text it is given")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Name the crate that serves this tool (proves the fork is in the build)")]
    fn build_info(&self) -> String {
        format!(
            "{} {} over rmcp {}",
            rmcp::fork::PACKAGE,
            rmcp::fork::FORK_VERSION,
            rmcp::fork::UPSTREAM_VERSION
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        crate::line::server_info(
            ServerCapabilities::builder().enable_tools().build(),
            "rmcp-resume demo server",
        )
    }
}

/// Sends `resources/updated` `tick://1..=count`, `interval_ms` apart, on the
/// session's standalone stream, from a task of its own (the `tick` tool of
/// [`DemoServer`] and of the matrix's `ShapesServer`).
pub(crate) fn spawn_ticks(peer: Peer<RoleServer>, count: u32, interval_ms: u64) {
    tokio::spawn(async move {
        for n in 1..=count {
            tokio::time::sleep(std::time::Duration::from_millis(interval_ms)).await;
            let param = crate::line::resource_updated(format!("tick://{n}"));
            if peer.notify_resource_updated(param).await.is_err() {
                break;
            }
        }
    });
}
