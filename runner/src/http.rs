//! `--http ADDR`: a health and metrics endpoint on a thread of its own.
//!
//! - `/healthz`: 200 while the process runs (alive);
//! - `/readyz`: 200 when every broker can do its work (its consumers connected), 503 while the
//!   app starts, while a broker is unreachable, and while it stops; the body says why;
//! - `/metrics`: every metric of the `metrics` facade in Prometheus's text format;
//! - with `--http-asyncapi` only: `/asyncapi.json`, `/asyncapi.yaml` (the service's AsyncAPI
//!   document) and `/asyncapi` (a page of it).
//!
//! A thread-based server keeps it independent of the app's runtime.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use ruststream::app::HealthCheck;
use tiny_http::{Header, Response, Server};

/// The buckets of every histogram, in seconds: handler durations from a millisecond to a
/// minute.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0, 60.0,
];

/// The service's AsyncAPI document as served, rendered once.
pub(crate) struct Served {
    json: String,
    yaml: String,
    page: String,
}

impl Served {
    /// `document` as JSON, YAML and a page.
    pub(crate) fn of(document: &serde_json::Value) -> Served {
        Served {
            json: serde_json::to_string_pretty(document).unwrap_or_default(),
            yaml: crate::asyncapi::to_yaml(document),
            page: crate::asyncapi::page(document),
        }
    }
}

/// The running endpoint: what `/readyz` asks, and the server to stop.
pub(crate) struct Endpoint {
    server: Arc<Server>,
    readiness: Arc<Mutex<Option<HealthCheck>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
}

impl Endpoint {
    /// Listen on `addr` (port 0: any free port) and serve from a thread. Installs the
    /// Prometheus recorder, unless the service installed a recorder of its own (then
    /// `/metrics` says so).
    pub(crate) fn start(addr: &str, asyncapi: Option<Served>) -> Result<Endpoint, String> {
        let metrics = install_recorder();
        let served = asyncapi.is_some();
        let server =
            Server::http(addr).map_err(|e| format!("cannot listen on `{addr}` for --http: {e}"))?;
        let addr = server.server_addr().to_ip().ok_or_else(|| {
            format!("--http `{addr}` is not an IP address and port, e.g. 127.0.0.1:9090")
        })?;
        let server = Arc::new(server);
        let readiness = Arc::new(Mutex::new(None::<HealthCheck>));
        let thread = {
            let server = server.clone();
            let readiness = readiness.clone();
            std::thread::Builder::new()
                .name("ruststream-http".into())
                .spawn(move || serve(&server, &readiness, metrics.as_ref(), asyncapi.as_ref()))
                .map_err(|e| format!("cannot start the --http thread: {e}"))?
        };
        tracing::info!(%addr, "http endpoint listening: /healthz /readyz /metrics{}", if served { " /asyncapi" } else { "" });
        Ok(Endpoint {
            server,
            readiness,
            thread: Some(thread),
            addr,
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What `/readyz` asks from now on; `None` answers 503 (starting or stopping).
    pub(crate) fn set_readiness(&self, check: Option<HealthCheck>) {
        *self.readiness.lock().unwrap_or_else(|e| e.into_inner()) = check;
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn install_recorder() -> Option<PrometheusHandle> {
    let recorder = match PrometheusBuilder::new().set_buckets(&BUCKETS) {
        Ok(builder) => builder.build_recorder(),
        Err(e) => {
            tracing::warn!("cannot set the histogram buckets ({e}); /metrics is off");
            return None;
        }
    };
    let handle = recorder.handle();
    match metrics::set_global_recorder(recorder) {
        Ok(()) => Some(handle),
        Err(_) => {
            tracing::warn!(
                "a metrics recorder is installed already (the service's own): /metrics is off; \
                 export through that recorder instead"
            );
            None
        }
    }
}

fn serve(
    server: &Server,
    readiness: &Mutex<Option<HealthCheck>>,
    metrics: Option<&PrometheusHandle>,
    asyncapi: Option<&Served>,
) {
    for request in server.incoming_requests() {
        let (status, body, content_type) = match request.url() {
            "/healthz" => (200, "ok\n".to_owned(), "text/plain"),
            "/readyz" => {
                let check = readiness.lock().unwrap_or_else(|e| e.into_inner()).clone();
                match check.map(|c| c.check()) {
                    Some(health) if health.ready => (200, health.detail + "\n", "text/plain"),
                    Some(health) => (503, health.detail + "\n", "text/plain"),
                    None => (503, "starting or stopping\n".to_owned(), "text/plain"),
                }
            }
            "/metrics" => match metrics {
                Some(handle) => (200, handle.render(), "text/plain; version=0.0.4"),
                None => (
                    404,
                    "no Prometheus recorder: the service installed its own\n".to_owned(),
                    "text/plain",
                ),
            },
            "/asyncapi.json" | "/asyncapi.yaml" | "/asyncapi" if asyncapi.is_some() => {
                let served = asyncapi.expect("checked");
                match request.url() {
                    "/asyncapi.json" => (200, served.json.clone(), "application/json"),
                    "/asyncapi.yaml" => (200, served.yaml.clone(), "application/yaml"),
                    _ => (200, served.page.clone(), "text/html; charset=utf-8"),
                }
            }
            other => (
                404,
                format!(
                    "no `{other}` here: /healthz, /readyz, /metrics{}\n",
                    if asyncapi.is_some() {
                        ", /asyncapi, /asyncapi.json or /asyncapi.yaml"
                    } else {
                        " (and /asyncapi with --http-asyncapi)"
                    }
                ),
                "text/plain",
            ),
        };
        let mut response = Response::from_string(body).with_status_code(status);
        if let Ok(header) = Header::from_bytes("Content-Type", content_type) {
            response = response.with_header(header);
        }
        let _ = request.respond(response);
    }
}
