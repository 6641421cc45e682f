#!/usr/bin/env python3
"""Publish large messages in chunks, or read messages, with the official Python client
(pulsar-client 3.13.0), for ruststream's live chunking tests.

    python3 chunked.py publish URL TOPIC [CODEC] < messages.json
    python3 chunked.py receive URL TOPIC SUBSCRIPTION COUNT

publish: stdin is a JSON array of objects {"payload": "<text>", "key": "<key or null>"}; each
         is sent by a producer with chunking_enabled=True and batching_enabled=False (the
         client refuses chunking with batching on), so that a payload over the broker's
         maxMessageSize is split into chunks of that size. With CODEC (lz4, zlib, zstd,
         snappy) the producer compresses each message whole, before it splits it. stdout: a JSON array of the returned
         message ids, as strings.
receive: a consumer (Shared, from the earliest message) receives COUNT messages within 60 s,
         acknowledges them, and prints a JSON array of {"size": bytes, "properties": {...}}.
         The client joins chunks itself, so a chunked message counts once.
exit:    0 done; 2 bad arguments or input; 3 the `pulsar` module (pulsar-client) is missing;
         1 any other failure (the traceback is on stderr).

Nothing else is written to stdout: the client's own logging goes to stderr.
"""

import json
import os
import sys

# The C++ library under the client logs to stdout: from here on fd 1 is stderr, and only the
# answer goes to the real stdout.
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


def fail(code, message):
    print(f"chunked.py: {message}", file=sys.stderr)
    sys.exit(code)


def publish(pulsar, client, topic, codec=None):
    try:
        messages = json.load(sys.stdin)
    except ValueError as error:
        fail(2, f"stdin is not JSON ({error}); send a JSON array of objects")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("payload"), str) for m in messages
    ):
        fail(2, 'stdin must be a JSON array of {"payload": str, "key": str or null}')
    options = {}
    if codec is not None:
        codecs = {
            "lz4": pulsar.CompressionType.LZ4,
            "zlib": pulsar.CompressionType.ZLib,
            "zstd": pulsar.CompressionType.ZSTD,
            "snappy": pulsar.CompressionType.SNAPPY,
        }
        if codec not in codecs:
            fail(2, f"unknown codec {codec!r}: choose one of {sorted(codecs)}")
        options["compression_type"] = codecs[codec]
    producer = client.create_producer(
        topic, chunking_enabled=True, batching_enabled=False, **options
    )
    ids = []
    for message in messages:
        key = message.get("key")
        if key:
            ids.append(str(producer.send(message["payload"].encode("utf-8"), partition_key=key)))
        else:
            ids.append(str(producer.send(message["payload"].encode("utf-8"))))
    producer.close()
    return ids


def receive(pulsar, client, topic, subscription, count):
    consumer = client.subscribe(
        topic,
        subscription,
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    received = []
    for _ in range(count):
        message = consumer.receive(timeout_millis=60_000)
        received.append({"size": len(message.data()), "properties": message.properties()})
        consumer.acknowledge(message)
    consumer.close()
    return received


def main():
    args = sys.argv[1:]
    if len(args) in (3, 4) and args[0] == "publish":
        command = "publish"
    elif len(args) == 5 and args[0] == "receive" and args[4].isdigit():
        command = "receive"
    else:
        fail(
            2,
            "usage: chunked.py publish URL TOPIC [CODEC] < messages.json | "
            "chunked.py receive URL TOPIC SUBSCRIPTION COUNT",
        )
    try:
        import pulsar
    except ImportError as error:
        fail(3, f"cannot import the Pulsar Python client ({error}) with {sys.executable}")

    # The C++ client's own console logger (to fd 1, which is stderr here), at WARN: a Python
    # logger would be called from the client's threads while the interpreter shuts down.
    client = pulsar.Client(args[1], logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        if command == "publish":
            result = publish(pulsar, client, args[2], args[3] if len(args) == 4 else None)
        else:
            result = receive(pulsar, client, args[2], args[3], int(args[4]))
    finally:
        client.close()
    json.dump(result, answer)
    answer.write("\n")
    answer.flush()
    # Done: leave without the interpreter's shutdown, during which the C++ client's threads
    # may still run.
    os._exit(0)


if __name__ == "__main__":
    main()
