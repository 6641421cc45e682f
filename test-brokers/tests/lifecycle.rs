//! Stopping: dropping a broker handle ends its processes and frees its ports.

use std::net::TcpStream;
use std::time::Duration;

use ruststream_test_brokers::{LiveBroker, PulsarLite};

#[test]
fn dropping_pulsar_lite_kills_the_process() {
    let lite = PulsarLite::start().unwrap_or_else(|err| panic!("{err}"));
    let addr = lite.addr();
    let dir = lite.dir().to_path_buf();
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok());
    drop(lite);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(),
        "pulsar-lite still listens on {addr} after drop"
    );
    assert!(!dir.exists(), "{} was not removed", dir.display());
}

#[test]
fn dropping_the_live_broker_stops_bridge_and_broker() {
    let broker = LiveBroker::pulsar_lite_blocking().unwrap_or_else(|err| panic!("{err}"));
    assert!(
        broker.name().starts_with("pulsar-lite "),
        "{}",
        broker.name()
    );
    assert!(
        broker.name().ends_with(" (via bridge)"),
        "{}",
        broker.name()
    );
    let bridge = broker
        .url()
        .strip_prefix("pulsar://")
        .expect("a pulsar:// URL")
        .parse()
        .expect("host:port");
    let lite = broker
        .pulsar_lite_process()
        .expect("a pulsar-lite broker")
        .addr();
    assert!(TcpStream::connect_timeout(&bridge, Duration::from_secs(2)).is_ok());
    drop(broker);
    for addr in [bridge, lite] {
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(),
            "{addr} still listens after drop"
        );
    }
}
