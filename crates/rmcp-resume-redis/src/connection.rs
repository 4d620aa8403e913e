//! Where the log's commands go: one Redis server or a Redis Cluster.
//!
//! Every operation is one command or one script on one session's keys, and
//! every key of a session carries the session id as its hash tag: on a
//! cluster, the command is routed by its first key (a script's `KEYS[1]`,
//! the session's epoch key) to the primary of the session's slot, where all
//! the other keys the script builds from its `base` argument live too.
//!
//! A live tail's blocking `XREAD` gets a connection of its own
//! ([`Backend::blocking`]): on one Redis a multiplexed connection, on a
//! cluster a cluster connection of its own (routed by the stream's key,
//! following the slot through a failover), so that a long `BLOCK` never
//! holds up the commands of the shared connection.

use std::time::Duration;

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::io::tcp::TcpSettings;
use redis::{
    AsyncConnectionConfig, Client, Cmd, ConnectionInfo, IntoConnectionInfo, Pipeline, RedisFuture,
    RedisResult, Value,
};

/// How long connecting to one node may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one command may wait for its answer (a blocking read: this
/// beyond its own wait).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the log connects to, and makes connections from.
pub(crate) enum Backend {
    /// One Redis.
    Single(Client),
    /// A Redis Cluster.
    Cluster {
        /// Its seed nodes.
        nodes: Vec<String>,
        /// The client of the shared connection.
        client: Box<ClusterClient>,
    },
}

impl Backend {
    /// One Redis at `url`.
    pub(crate) fn single(url: &str) -> RedisResult<Self> {
        Ok(Self::Single(Client::open(connection_info(url)?)?))
    }

    /// A cluster, found from any of `nodes` (each a `redis://host:port`
    /// URL).
    pub(crate) fn cluster(nodes: Vec<String>) -> RedisResult<Self> {
        let client = Box::new(cluster_client(&nodes, RESPONSE_TIMEOUT)?);
        Ok(Self::Cluster { nodes, client })
    }

    /// The shared connection: it reconnects by itself (and, on a cluster,
    /// follows slots that move); a command made while its node is away
    /// fails after the response timeout.
    pub(crate) async fn shared(&self) -> RedisResult<Connection> {
        match self {
            Self::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    .set_number_of_retries(2);
                let manager = client.get_connection_manager_with_config(config).await?;
                Ok(Connection::Manager(manager))
            }
            Self::Cluster { client, .. } => {
                Ok(Connection::Cluster(client.get_async_connection().await?))
            }
        }
    }

    /// A connection of its own for blocking reads that wait at most
    /// `block`: its answers may take that long and more.
    pub(crate) async fn blocking(&self, block: Duration) -> RedisResult<Connection> {
        let wait = block + RESPONSE_TIMEOUT;
        match self {
            Self::Single(client) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(wait));
                let conn = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                Ok(Connection::Multiplexed(conn))
            }
            Self::Cluster { nodes, .. } => {
                // A client of its own: the overall timeout of a cluster
                // request is fixed when its client is built.
                let client = cluster_client(nodes, wait)?;
                Ok(Connection::Cluster(client.get_async_connection().await?))
            }
        }
    }
}

fn cluster_client(nodes: &[String], response: Duration) -> RedisResult<ClusterClient> {
    ClusterClient::builder(nodes.iter().cloned())
        .connection_timeout(CONNECT_TIMEOUT)
        .response_timeout(response)
        .tcp_settings(tcp_settings())
        .build()
}

/// `url` with this crate's TCP settings (a Unix socket has none).
fn connection_info(url: &str) -> RedisResult<ConnectionInfo> {
    Ok(url.into_connection_info()?.set_tcp_settings(tcp_settings()))
}

/// `TCP_NODELAY` on, which redis-rs leaves off. Commands from many tasks
/// share one connection: with Nagle's algorithm, a small command written
/// while an earlier write is unacknowledged waits for that acknowledgement,
/// which the peer may delay (up to 40 ms on Linux).
fn tcp_settings() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

/// A connection to one Redis or to a cluster; commands and scripts run on
/// it unchanged (it is a [`ConnectionLike`]).
#[derive(Clone)]
pub(crate) enum Connection {
    /// One Redis, reconnecting by itself.
    Manager(ConnectionManager),
    /// One Redis, on a connection of its own.
    Multiplexed(MultiplexedConnection),
    /// A cluster: each command goes to the primary of its key's slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Manager(conn) => conn.req_packed_command(cmd),
            Self::Multiplexed(conn) => conn.req_packed_command(cmd),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Manager(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Multiplexed(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Manager(conn) => conn.get_db(),
            Self::Multiplexed(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::connection_info;

    #[test]
    fn tcp_connections_disable_nagle() {
        let info = connection_info("redis://127.0.0.1:6379/0").expect("a valid url");
        assert!(info.tcp_settings().nodelay());
    }
}
