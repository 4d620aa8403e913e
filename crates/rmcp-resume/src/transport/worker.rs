//! Upstream's worker module; on 0.15 to 2.2, with the fork's
//! [`WorkerTransport`].
//!
//! Upstream spells its client transport as an alias,
//! `StreamableHttpClientTransport<C> = WorkerTransport<StreamableHttpClientWorker<C>>`,
//! and gives that alias its constructors (`from_uri`, `with_client`, …).
//! Code names either spelling and passes one where the other is asked for.
//! The fork's worker is its own type, and inherent constructors can only be
//! written on a type of this crate; so on the lines whose applications
//! compile against that alias (0.15 to 2.2) the worker transport is the
//! fork's: the same API as upstream's, running any upstream [`Worker`]
//! through upstream's own transport, and the streamable-HTTP client straight
//! over its resuming guard. On 3.11 the module is upstream's, unchanged (see
//! `docs/client.md` for what its client spelling costs there).

pub use upstream::transport::worker::*;

crate::line::with_transport_alias! {
    use futures::future::BoxFuture;
    use tokio_util::sync::CancellationToken;

    use crate::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
    use crate::transport::Transport;

    /// Runs a [`Worker`] as a [`Transport`]; upstream's type, with the
    /// streamable-HTTP client's constructors (see the module's docs).
    pub struct WorkerTransport<W: Worker> {
        inner: Inner<W>,
    }

    enum Inner<W: Worker> {
        /// Any worker, spawned by upstream's transport as upstream spawns it.
        Spawned(upstream::transport::worker::WorkerTransport<W>),
        /// A transport that does the worker's job without its queues: the
        /// streamable-HTTP client built by its constructors. Boxed, because
        /// its type names the client, which `W` does not expose.
        // Only the streamable-HTTP client builds one.
        #[cfg_attr(not(feature = "transport-streamable-http-client"), allow(dead_code))]
        Direct {
            transport: Box<dyn ErasedTransport<W::Role, W::Error>>,
            ct: CancellationToken,
            // Cancels the transport when this is dropped, as upstream's does.
            _drop_guard: tokio_util::sync::DropGuard,
        },
    }

    impl<W: Worker> WorkerTransport<W> {
        /// The token that stops the worker.
        pub fn cancel_token(&self) -> CancellationToken {
            match &self.inner {
                Inner::Spawned(spawned) => spawned.cancel_token(),
                Inner::Direct { ct, .. } => ct.clone(),
            }
        }

        /// Runs `worker` on a task of its own.
        pub fn spawn(worker: W) -> Self {
            Self::spawn_with_ct(worker, CancellationToken::new())
        }

        /// Runs `worker` on a task of its own until `transport_task_ct` is
        /// cancelled.
        pub fn spawn_with_ct(worker: W, transport_task_ct: CancellationToken) -> Self {
            Self {
                inner: Inner::Spawned(upstream::transport::worker::WorkerTransport::spawn_with_ct(
                    worker,
                    transport_task_ct,
                )),
            }
        }

        /// A transport that stands for a worker of type `W` and stops when
        /// `ct` is cancelled (or this is dropped).
        #[cfg_attr(not(feature = "transport-streamable-http-client"), allow(dead_code))]
        pub(crate) fn direct<T>(transport: T, ct: CancellationToken) -> Self
        where
            T: Transport<W::Role, Error = W::Error> + Sync + 'static,
        {
            Self {
                inner: Inner::Direct {
                    transport: Box::new(transport),
                    _drop_guard: ct.clone().drop_guard(),
                    ct,
                },
            }
        }
    }

    impl<W: Worker> Transport<W::Role> for WorkerTransport<W> {
        type Error = W::Error;

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<W::Role>> {
            match &mut self.inner {
                Inner::Direct { transport, .. } => transport.receive_boxed().await,
                Inner::Spawned(spawned) => spawned.receive().await,
            }
        }

        // Not an `async fn`: the future must not borrow `self` (the
        // service sends from a task of its own).
        fn send(
            &mut self,
            message: TxJsonRpcMessage<W::Role>,
        ) -> impl Future<Output = Result<(), W::Error>> + Send + 'static {
            use futures::future::Either;
            match &mut self.inner {
                Inner::Direct { transport, .. } => Either::Left(transport.send_boxed(message)),
                Inner::Spawned(spawned) => Either::Right(spawned.send(message)),
            }
        }

        async fn close(&mut self) -> Result<(), W::Error> {
            match &mut self.inner {
                Inner::Direct { transport, .. } => transport.close_boxed().await,
                Inner::Spawned(spawned) => spawned.close().await,
            }
        }
    }

    /// [`Transport`] with its futures boxed, so that one can be held
    /// without naming its type.
    trait ErasedTransport<R: ServiceRole, E>: Send + Sync {
        fn send_boxed(&mut self, item: TxJsonRpcMessage<R>) -> BoxFuture<'static, Result<(), E>>;
        fn receive_boxed(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<R>>>;
        fn close_boxed(&mut self) -> BoxFuture<'_, Result<(), E>>;
    }

    impl<R, T> ErasedTransport<R, T::Error> for T
    where
        R: ServiceRole,
        T: Transport<R> + Sync + 'static,
    {
        fn send_boxed(&mut self, item: TxJsonRpcMessage<R>) -> BoxFuture<'static, Result<(), T::Error>> {
            Box::pin(Transport::send(self, item))
        }

        fn receive_boxed(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<R>>> {
            Box::pin(Transport::receive(self))
        }

        fn close_boxed(&mut self) -> BoxFuture<'_, Result<(), T::Error>> {
            Box::pin(Transport::close(self))
        }
    }
}
