#!/usr/bin/env python3
"""Write or read messages with the official Python client (pulsar-client 3.13.0, over the C++
client), for the live interoperability tests.

    python3 interop.py produce URL TOPIC CODEC COUNT [json-schema]
    python3 interop.py consume URL TOPIC SUBSCRIPTION COUNT TIMEOUT_SECONDS

produce: COUNT messages with payloads {"id": 0} .. {"id": COUNT-1}, through one producer with
         batching on (all COUNT fit one batch, flushed once) and compression CODEC (none, lz4,
         zlib, zstd, snappy). With `json-schema` the producer registers a JSON schema of a
         record with one integer field `id` and sends records. Prints nothing.
consume: subscribes SUBSCRIPTION (Shared, from the earliest message), receives until COUNT
         messages came or TIMEOUT_SECONDS passed, acknowledges each, and prints the payloads
         received as a JSON array of strings (UTF-8).
exit:    0 done; 2 bad arguments; 3 the `pulsar` module (pulsar-client) is missing; 1 any
         other failure (the traceback is on stderr). Only the answer goes to stdout.
"""

import json
import os
import sys

# The C++ library under the client logs to stdout: from here on fd 1 is stderr.
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


def fail(code, message):
    print(f"interop.py: {message}", file=sys.stderr)
    sys.exit(code)


def codec_of(pulsar, name):
    codecs = {
        "none": pulsar.CompressionType.NONE,
        "lz4": pulsar.CompressionType.LZ4,
        "zlib": pulsar.CompressionType.ZLib,
        "zstd": pulsar.CompressionType.ZSTD,
        "snappy": pulsar.CompressionType.SNAPPY,
    }
    if name not in codecs:
        fail(2, f"unknown codec {name!r}: choose one of {sorted(codecs)}")
    return codecs[name]


def produce(pulsar, client, topic, codec, count, json_schema):
    options = dict(
        compression_type=codec_of(pulsar, codec),
        batching_enabled=True,
        batching_max_messages=max(count, 1),
        batching_max_publish_delay_ms=60_000,
    )
    if json_schema:
        from pulsar.schema import Integer, JsonSchema, Record

        class Job(Record):
            id = Integer()

        producer = client.create_producer(topic, schema=JsonSchema(Job), **options)
        messages = [Job(id=i) for i in range(count)]
    else:
        producer = client.create_producer(topic, **options)
        messages = [json.dumps({"id": i}).encode("utf-8") for i in range(count)]
    failures = []

    def sent(result, _message_id):
        if result != pulsar.Result.Ok:
            failures.append(str(result))

    for message in messages:
        producer.send_async(message, sent)
    producer.flush()
    producer.close()
    if failures:
        raise RuntimeError(f"{len(failures)} sends failed: {failures[:3]}")


def consume(pulsar, client, topic, subscription, count, timeout):
    import time

    consumer = client.subscribe(
        topic,
        subscription,
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    payloads = []
    deadline = time.monotonic() + timeout
    while len(payloads) < count:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            break
        try:
            message = consumer.receive(timeout_millis=min(left_ms, 1000))
        except pulsar.Timeout:
            continue
        payloads.append(message.data().decode("utf-8"))
        consumer.acknowledge(message)
    consumer.close()
    return payloads


def main():
    args = sys.argv[1:]
    if len(args) < 1 or args[0] not in ("produce", "consume"):
        fail(2, "usage: interop.py produce URL TOPIC CODEC COUNT [json-schema] | "
                "consume URL TOPIC SUBSCRIPTION COUNT TIMEOUT_SECONDS")
    try:
        import pulsar
    except ImportError as error:
        fail(3, f"cannot import the Pulsar Python client ({error}) with {sys.executable}")
    client = None
    try:
        if args[0] == "produce":
            if len(args) not in (5, 6) or (len(args) == 6 and args[5] != "json-schema"):
                fail(2, "usage: interop.py produce URL TOPIC CODEC COUNT [json-schema]")
            url, topic, codec, count = args[1], args[2], args[3], int(args[4])
            client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
            produce(pulsar, client, topic, codec, count, len(args) == 6)
            result = None
        else:
            if len(args) != 6:
                fail(2, "usage: interop.py consume URL TOPIC SUBSCRIPTION COUNT TIMEOUT_SECONDS")
            url, topic, subscription = args[1], args[2], args[3]
            count, timeout = int(args[4]), float(args[5])
            client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
            result = consume(pulsar, client, topic, subscription, count, timeout)
    finally:
        if client is not None:
            client.close()
    if result is not None:
        json.dump(result, answer)
    answer.write("\n")
    answer.flush()
    # Leave without the interpreter's shutdown, during which the C++ client's threads may run.
    os._exit(0)


if __name__ == "__main__":
    main()
