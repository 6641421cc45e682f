#!/usr/bin/env python3
"""Feed and inspect the live forwarding crash test with the official Python client
(pulsar-client 3.13.0, over the C++ client).

    python3 forwarding.py produce URL TOPIC COUNT
    python3 forwarding.py snapshot URL QUIET_SECONDS < SPEC

produce:  COUNT orders {"id": 0} .. {"id": COUNT-1} to TOPIC, through one producer with
          batching on (off by default in the Python client; its batching settings are the
          defaults: at most 1,000 messages an entry, 10 ms) and block_if_queue_full (its 1,000
          pending messages would refuse the rest), each sent with send_async, then flushed.
          Prints the number of entries the orders went into.
snapshot: SPEC (JSON on stdin) is {"read": {NAME: TOPIC, ..}, "peek": {"topics": [TOPIC, ..],
          "subscription": SUB}}. Each TOPIC of "read" is read from its earliest message on a
          subscription of its own, until no message came for QUIET_SECONDS; the "id" (or
          "order") of each payload is kept. The "peek" topics are read on SUB, the service's own
          subscription, without acknowledging anything (the messages go back to it when the
          consumer closes): what the service has not acknowledged. Prints
          {"read": {NAME: [ids]}, "unacked": {TOPIC: [ids]}}.
exit:     0 done; 2 bad arguments; 3 the `pulsar` module (pulsar-client) is missing; 1 any
          other failure (the traceback is on stderr). Only the answer goes to stdout.
"""

import json
import os
import sys
import uuid

# The C++ library under the client logs to stdout: from here on fd 1 is stderr.
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


def fail(code, message):
    print(f"forwarding.py: {message}", file=sys.stderr)
    sys.exit(code)


def produce(pulsar, client, topic, count):
    producer = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
    failures = []
    entries = set()

    def sent(result, message_id):
        if result != pulsar.Result.Ok:
            failures.append(str(result))
        else:
            entries.add((message_id.ledger_id(), message_id.entry_id()))

    for i in range(count):
        producer.send_async(json.dumps({"id": i}).encode("utf-8"), sent)
    producer.flush()
    producer.close()
    if failures:
        raise RuntimeError(f"{len(failures)} sends failed: {failures[:3]}")
    return len(entries)


def id_of(data):
    value = json.loads(data.decode("utf-8"))
    return value["id"] if "id" in value else value["order"]


def drain(pulsar, consumer, quiet, acknowledge):
    """(topic, id) of every message until none came for `quiet` seconds."""
    seen = []
    while True:
        try:
            message = consumer.receive(timeout_millis=int(quiet * 1000))
        except pulsar.Timeout:
            return seen
        seen.append((message.topic_name(), id_of(message.data())))
        if acknowledge:
            consumer.acknowledge(message)


def snapshot(pulsar, client, quiet, spec):
    read = {}
    for name, topic in spec.get("read", {}).items():
        consumer = client.subscribe(
            topic,
            f"check-{uuid.uuid4()}",
            consumer_type=pulsar.ConsumerType.Exclusive,
            initial_position=pulsar.InitialPosition.Earliest,
        )
        read[name] = [i for _, i in drain(pulsar, consumer, quiet, True)]
        consumer.unsubscribe()
    unacked = {}
    peek = spec.get("peek")
    if peek:
        consumer = client.subscribe(
            peek["topics"],
            peek["subscription"],
            consumer_type=pulsar.ConsumerType.Shared,
        )
        for topic, i in drain(pulsar, consumer, quiet, False):
            unacked.setdefault(topic, []).append(i)
        consumer.close()
    return {"read": read, "unacked": unacked}


def main():
    args = sys.argv[1:]
    usage = "usage: forwarding.py produce URL TOPIC COUNT | snapshot URL QUIET_SECONDS < SPEC"
    if len(args) < 1 or args[0] not in ("produce", "snapshot"):
        fail(2, usage)
    try:
        import pulsar
    except ImportError as error:
        fail(3, f"cannot import the Pulsar Python client ({error}) with {sys.executable}")
    client = None
    try:
        if args[0] == "produce":
            if len(args) != 4:
                fail(2, usage)
            client = pulsar.Client(args[1], logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
            result = produce(pulsar, client, args[2], int(args[3]))
        else:
            if len(args) != 3:
                fail(2, usage)
            spec = json.load(sys.stdin)
            client = pulsar.Client(args[1], logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
            result = snapshot(pulsar, client, float(args[2]), spec)
    finally:
        if client is not None:
            client.close()
    json.dump(result, answer)
    answer.write("\n")
    answer.flush()
    # Leave without the interpreter's shutdown, during which the C++ client's threads may run.
    os._exit(0)


if __name__ == "__main__":
    main()
