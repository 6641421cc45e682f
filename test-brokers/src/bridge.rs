//! The loopback proxy that lets pulsar-rs talk to pulsar-lite.

use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::frame::frame_len;
use crate::{BrokerError, DeliveryLog, FrameError, FrameFixer};

/// A proxy on `127.0.0.1:<free port>` in front of a pulsar-lite broker.
///
/// For each client connection it opens one to the broker; client→broker bytes pass unchanged,
/// broker→client frames go through a [`FrameFixer`]. It runs on a thread of its own with its own
/// tokio runtime, so tests on any runtime (tokio, async-std, smol) can use it. Dropping it stops
/// accepting, closes every connection and joins the thread.
#[derive(Debug)]
pub struct LiteBridge {
    addr: SocketAddr,
    deliveries: DeliveryLog,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LiteBridge {
    /// Starts a bridge to the broker listening on `upstream`; it accepts connections as soon as
    /// this returns.
    pub fn start(upstream: SocketAddr) -> Result<Self, BrokerError> {
        let bridge_error =
            |what: &'static str| move |source: std::io::Error| BrokerError::Bridge { what, source };
        let std_listener = StdListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(bridge_error("bind a listening socket on 127.0.0.1"))?;
        std_listener
            .set_nonblocking(true)
            .map_err(bridge_error("make the listening socket non-blocking"))?;
        let addr = std_listener
            .local_addr()
            .map_err(bridge_error("read the listening socket's port"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(bridge_error("build the bridge's tokio runtime"))?;
        let listener = {
            let _context = runtime.enter();
            TcpListener::from_std(std_listener)
                .map_err(bridge_error("register the listening socket with tokio"))?
        };

        let deliveries = DeliveryLog::new();
        let fixer = Arc::new(FrameFixer::new(
            format!("pulsar://{addr}"),
            deliveries.clone(),
        ));
        let (shutdown, stop) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("lite-bridge-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(accept_until_stopped(listener, upstream, fixer, stop));
                // Dropping the runtime here cancels every connection task.
            })
            .map_err(bridge_error("spawn the bridge thread"))?;

        Ok(Self {
            addr,
            deliveries,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The URL to give pulsar-rs: `pulsar://127.0.0.1:<bridge port>`.
    pub fn url(&self) -> String {
        format!("pulsar://{}", self.addr)
    }

    /// The address the bridge listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every delivery the bridge forwarded, with the redelivery counts pulsar-rs hides.
    pub fn deliveries(&self) -> &DeliveryLog {
        &self.deliveries
    }
}

impl Drop for LiteBridge {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            // An Err means the thread already ended; joining below is all that is left.
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panic of the bridge thread was already reported on stderr.
            let _ = thread.join();
        }
    }
}

async fn accept_until_stopped(
    listener: TcpListener,
    upstream: SocketAddr,
    fixer: Arc<FrameFixer>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    tokio::spawn(serve(client, upstream, Arc::clone(&fixer)));
                }
                Err(err) => eprintln!("lite bridge: accepting a client failed: {err}"),
            },
        }
    }
}

/// Carries one client connection until either side closes it.
async fn serve(client: TcpStream, upstream: SocketAddr, fixer: Arc<FrameFixer>) {
    let broker = match TcpStream::connect(upstream).await {
        Ok(broker) => broker,
        Err(err) => {
            eprintln!(
                "lite bridge: cannot reach the broker at {upstream} ({err}); \
                 did pulsar-lite exit? closing the client connection"
            );
            return;
        }
    };
    // Pulsar frames are small and latency matters to tests that time redeliveries.
    let _ = client.set_nodelay(true);
    let _ = broker.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (broker_read, mut broker_write) = broker.into_split();
    let upward = async {
        let _ = tokio::io::copy(&mut client_read, &mut broker_write).await;
    };
    let downward = async {
        if let Err(err) = forward_fixed(broker_read, &mut client_write, &fixer).await {
            eprintln!("lite bridge: closing a connection: {err}");
        }
    };
    // Pulsar clients never half-close: when either direction ends the connection is over.
    tokio::select! {
        () = upward => {}
        () = downward => {}
    }
}

/// Why the broker→client direction of a connection ended early.
enum ForwardError {
    Io(std::io::Error),
    Frame(FrameError),
}

impl std::fmt::Display for ForwardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(err) => write!(f, "socket error: {err}"),
            Self::Frame(err) => write!(f, "unusable frame from the broker: {err}"),
        }
    }
}

/// Cuts the broker's byte stream into frames and writes each fixed frame to the client.
async fn forward_fixed(
    mut from_broker: OwnedReadHalf,
    to_client: &mut OwnedWriteHalf,
    fixer: &FrameFixer,
) -> Result<(), ForwardError> {
    let mut pending: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let read = from_broker
            .read(&mut chunk)
            .await
            .map_err(ForwardError::Io)?;
        if read == 0 {
            return Ok(());
        }
        pending.extend_from_slice(&chunk[..read]);
        let mut consumed = 0;
        while let Some(len) = frame_len(&pending[consumed..]).map_err(ForwardError::Frame)? {
            let fixed = fixer
                .fix(&pending[consumed..consumed + len])
                .map_err(ForwardError::Frame)?;
            to_client
                .write_all(&fixed)
                .await
                .map_err(ForwardError::Io)?;
            consumed += len;
        }
        pending.drain(..consumed);
    }
}
