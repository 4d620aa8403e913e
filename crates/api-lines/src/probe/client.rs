// Upstream's client transport is an alias,
// `WorkerTransport<StreamableHttpClientWorker<C>>`: code names either
// spelling and passes one where the other is asked for.

type Worker<C> = rmcp::transport::streamable_http_client::StreamableHttpClientWorker<C>;
type Alias<C> = rmcp::transport::StreamableHttpClientTransport<C>;
type Spelled<C> = rmcp::transport::WorkerTransport<Worker<C>>;
type Config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// The alias is the worker transport: each spelling is the other's type.
pub fn alias_is_the_worker_transport(url: &str) -> Spelled<reqwest::Client> {
    let transport: Alias<reqwest::Client> = Alias::from_uri(url.to_owned());
    transport
}

pub fn spelled_constructors(url: &str) -> [Alias<reqwest::Client>; 4] {
    [
        Spelled::from_uri(url.to_owned()),
        Spelled::from_config(Config::with_uri(url.to_owned())),
        Spelled::with_client(reqwest::Client::new(), Config::with_uri(url.to_owned())),
        rmcp::transport::WorkerTransport::spawn(Worker::<reqwest::Client>::new_simple(
            url.to_owned(),
        )),
    ]
}

/// Generic code over any client, with upstream's bound.
pub fn generic<C>(client: C, url: &str) -> Spelled<C>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient,
{
    let transport = Alias::with_client(client, Config::with_uri(url.to_owned()));
    let _token: tokio_util::sync::CancellationToken = transport.cancel_token();
    transport
}

/// A worker spawned with a token, the way upstream spawns any worker.
pub fn spawned_with_token(
    url: &str,
    ct: tokio_util::sync::CancellationToken,
) -> Alias<reqwest::Client> {
    rmcp::transport::WorkerTransport::spawn_with_ct(
        Worker::new(reqwest::Client::new(), Config::with_uri(url.to_owned())),
        ct,
    )
}

/// The transport is a transport of the client role, and serves a client.
pub fn serves_a_client<C>(transport: Alias<C>)
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient,
{
    fn is_transport<T: rmcp::transport::Transport<rmcp::RoleClient> + Send + 'static>(_: &T) {}
    is_transport(&transport);
    use rmcp::ServiceExt;
    let _serving = rmcp::model::ClientInfo::default().serve(transport);
}

/// What upstream's transport is beside: it moves between tasks and threads.
pub fn auto_traits() {
    fn held<T: Send + Sync + Unpin + 'static>() {}
    held::<Alias<reqwest::Client>>();
    held::<rmcp::transport::WorkerTransport<Worker<reqwest::Client>>>();
}
