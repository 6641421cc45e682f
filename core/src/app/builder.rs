//! `RustStream`, the app builder.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::future::Future;

use super::{App, AppInfo, AppParts, BoxError, Broker, Startup};
use crate::middleware::{Layer, Stack};

/// Builds an [`App`]: identity, startup, brokers.
///
/// ```
/// use std::convert::Infallible;
/// use ruststream::{App, AppInfo, RustStream};
///
/// #[derive(Default)]
/// struct Clients;
///
/// let app = RustStream::new(AppInfo::new("refunds", "0.1.0"))
///     .on_startup(async move |()| Ok::<_, Infallible>(Clients::default()));
/// assert_eq!(app.into_parts().info.name(), "refunds");
/// ```
///
/// Brokers are added with `with_broker(broker, |b| ..)`; see the broker crates.
pub struct RustStream<S> {
    info: AppInfo,
    startup: Startup<S>,
    brokers: Vec<Box<dyn Broker<S>>>,
    layers: Stack,
    misuse: Option<String>,
}

impl RustStream<()> {
    /// An app with no state (`()`) and no broker yet.
    pub fn new(info: AppInfo) -> Self {
        RustStream {
            info,
            startup: Box::new(|| Box::pin(async { Ok(()) })),
            brokers: Vec::new(),
            layers: Stack::new(),
            misuse: None,
        }
    }
}

impl<S: Send + Sync + 'static> RustStream<S> {
    /// Build the next state from the previous one (`()` at first) when the service starts.
    ///
    /// Runs once, after every registration was checked and before any broker connects; an
    /// error stops the service. Call it before `with_broker`: handlers are mounted for one
    /// state type.
    pub fn on_startup<F, Fut, S2, E>(self, f: F) -> RustStream<S2>
    where
        F: FnOnce(S) -> Fut + Send + 'static,
        Fut: Future<Output = Result<S2, E>> + Send + 'static,
        S2: Send + Sync + 'static,
        E: core::error::Error + Send + Sync + 'static,
    {
        let previous = self.startup;
        let misuse = self.misuse.or_else(|| {
            (!self.brokers.is_empty()).then(|| {
                String::from(
                    "`on_startup` was called after `with_broker`; the brokers added before it \
                     were built for the previous state type and are lost. Call `on_startup` \
                     first, then `with_broker`",
                )
            })
        });
        RustStream {
            info: self.info,
            startup: Box::new(move || {
                Box::pin(async move {
                    let state = previous().await?;
                    f(state).await.map_err(|e| Box::new(e) as BoxError)
                })
            }),
            brokers: Vec::new(),
            layers: self.layers,
            misuse,
        }
    }

    /// Put `layer` around every handler of every broker, and every message the app and its
    /// handlers publish: the outermost scope, inside each broker's built-ins (see
    /// [`middleware`](crate::middleware)). Layers added later sit further in.
    pub fn layer(mut self, layer: impl Layer) -> Self {
        self.layers = self.layers.push(layer);
        self
    }

    /// Mount handlers on `broker`: `configure` receives the broker to call `include` on.
    pub fn with_broker<B>(mut self, mut broker: B, configure: impl FnOnce(&mut B)) -> Self
    where
        B: Broker<S>,
    {
        configure(&mut broker);
        self.brokers.push(Box::new(broker));
        self
    }
}

impl<S: Send + Sync + 'static> App for RustStream<S> {
    type State = S;

    fn into_parts(self) -> AppParts<S> {
        AppParts {
            info: self.info,
            startup: self.startup,
            brokers: self.brokers,
            layers: self.layers,
            misuse: self.misuse,
        }
    }
}
