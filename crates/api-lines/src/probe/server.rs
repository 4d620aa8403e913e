// Upstream 0.15 to 2.2 serve any `Service<RoleServer>` (3.x is where the
// service came to ask for a `ServerHandler`): gateways serve a router, a
// boxed service or their own implementation.

/// A handler with nothing of its own: the defaults of upstream's trait.
#[derive(Clone)]
pub struct Plain;

impl rmcp::ServerHandler for Plain {}

/// A hand-written service, as gateways and multi-tenant proxies write them.
pub struct Gateway;

impl rmcp::Service<rmcp::RoleServer> for Gateway {
    async fn handle_request(
        &self,
        _request: rmcp::model::ClientRequest,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ServerResult, rmcp::ErrorData> {
        Err(rmcp::ErrorData::internal_error(
            "the probe serves nothing",
            None,
        ))
    }

    async fn handle_notification(
        &self,
        _notification: rmcp::model::ClientNotification,
        _context: rmcp::service::NotificationContext<rmcp::RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        Ok(())
    }

    fn get_info(&self) -> rmcp::model::ServerInfo {
        rmcp::model::ServerInfo::default()
    }
}

type Manager = rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

fn served<S>(
    factory: impl Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<S, Manager>
where
    S: rmcp::Service<rmcp::RoleServer> + Send + 'static,
{
    rmcp::transport::streamable_http_server::StreamableHttpService::new(
        factory,
        std::sync::Arc::new(Manager::default()),
        Default::default(),
    )
}

/// A tower service over `S`, as axum asks for it, with upstream's bound.
fn tower<S>(service: rmcp::transport::streamable_http_server::StreamableHttpService<S, Manager>)
where
    S: rmcp::Service<rmcp::RoleServer> + Send + 'static,
{
    fn is_tower<T: tower_service::Service<http::Request<String>> + Clone + Send + 'static>(_: &T) {}
    is_tower(&service);
}

pub fn serves_a_router() {
    tower(served(|| {
        Ok(rmcp::handler::server::router::Router::new(Plain))
    }));
}

pub fn serves_a_boxed_service() {
    use rmcp::ServiceExt;
    tower(served(|| Ok(Plain.into_dyn())));
}

pub fn serves_a_hand_written_service() {
    tower(served(|| Ok(Gateway)));
}

pub fn serves_a_handler() {
    tower(served(|| Ok(Plain)));
}
