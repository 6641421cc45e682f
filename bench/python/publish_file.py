#!/usr/bin/env python3
"""The official Python client (pulsar-client 3.13.0) publishing a file a line at a time, as
`<service> run --publish TOPIC=FILE` does, for scripts/bench's side-by-side figure.

    python3 publish_file.py URL TOPIC FILE

Each non-blank line that does not start with `#` is one message (its bytes, trimmed), sent with
send_async through one producer with batching on (off by default in the Python client; its
batching settings are the defaults: at most 1,000 messages an entry, 10 ms) and
block_if_queue_full, then flushed. Prints `published messages=N seconds=S`, S from the first
line read to the flush's end (the client connected and the producer created before).
"""

import os
import sys
import time

answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


def main():
    if len(sys.argv) != 4:
        print("usage: publish_file.py URL TOPIC FILE", file=sys.stderr)
        sys.exit(2)
    url, topic, path = sys.argv[1:]
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    producer = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
    failures = []

    def sent(result, _message_id):
        if result != pulsar.Result.Ok:
            failures.append(str(result))

    count = 0
    started = time.monotonic()
    with open(path, "rb") as lines:
        for line in lines:
            text = line.strip()
            if not text or text.startswith(b"#"):
                continue
            producer.send_async(text, sent)
            count += 1
    producer.flush()
    seconds = time.monotonic() - started
    producer.close()
    client.close()
    if failures:
        print(f"publish_file.py: {len(failures)} sends failed: {failures[:3]}", file=sys.stderr)
        sys.exit(1)
    answer.write(f"published messages={count} seconds={seconds:.6f}\n")
    answer.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
