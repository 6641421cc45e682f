#!/usr/bin/env python3
"""Publish one keyed message per key with the official Python client (pulsar-client 3.13.0),
and print the partition each one landed on.

    python3 keyed_publish.py URL TOPIC < keys.json

stdin:  a JSON array of strings, the keys.
stdout: a JSON array of integers, in key order: the partition index of the MessageId that
        send() returned for the message with that key (MessageId.partition()). Nothing else
        is written to stdout: the client's own logging goes to stderr.
exit:   0 done; 2 bad arguments or input; 3 the `pulsar` module (pulsar-client) is missing;
        1 any other failure (the traceback is on stderr).

The producer has the client's DEFAULT settings, so keys are routed as a Python service would
route them: default routing mode (RoundRobinDistribution, which sends a keyed message to the
partition its key hashes to) and the C++ client's default hashing scheme (BoostHash); no custom
router. Each message's payload is its key (UTF-8). ruststream-test-brokers runs this script
(other_clients::python_keyed_partitions) to compare ruststream's routing with the official
client's.
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
    print(f"keyed_publish.py: {message}", file=sys.stderr)
    sys.exit(code)


def main():
    if len(sys.argv) != 3:
        fail(2, "usage: keyed_publish.py URL TOPIC < keys.json (a JSON array of strings)")
    url, topic = sys.argv[1], sys.argv[2]
    try:
        keys = json.load(sys.stdin)
    except ValueError as error:
        fail(2, f"stdin is not JSON ({error}); send a JSON array of strings")
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        fail(2, "stdin must be a JSON array of strings")

    try:
        import pulsar
    except ImportError as error:
        fail(3, f"cannot import the Pulsar Python client ({error}) with {sys.executable}")

    # The C++ client's own console logger (to fd 1, which is stderr here), at WARN. A Python
    # logger would be called from the client's threads while the interpreter shuts down, which
    # aborts the process ("terminate called without an active exception").
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        producer = client.create_producer(topic)
        partitions = []
        for key in keys:
            message_id = producer.send(key.encode("utf-8"), partition_key=key)
            partitions.append(message_id.partition())
        producer.close()
    finally:
        client.close()
    json.dump(partitions, answer)
    answer.write("\n")
    answer.flush()
    # Done: leave without the interpreter's shutdown, during which the C++ client's threads
    # may still run.
    os._exit(0)


if __name__ == "__main__":
    main()
