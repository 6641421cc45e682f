#!/usr/bin/env python3
"""Produce or consume with the official Python client (pulsar-client 3.13.0, over the C++
client) on a secured broker, for test-brokers' secured standalone tests.

    python3 secured_client.py produce URL TOPIC
    python3 secured_client.py consume URL TOPIC SUBSCRIPTION COUNT TIMEOUT_SECONDS

stdin:   one JSON object, so that no secret is on a command line:
         {"trust": CA PEM path or null, "operation_timeout_seconds": N,
          "payloads": [strings] (produce only),
          "auth": {"kind": "none"}
                | {"kind": "token", "token": JWT}
                | {"kind": "tls", "certificate": PEM path, "key": PKCS#8 PEM path}
                | {"kind": "oauth2", "issuer_url": URL, "credentials_file": path,
                   "audience": string or null, "scope": string or null}}
         Host names are verified (tls_validate_hostname) whenever `trust` is given.
produce: sends the payloads through one producer, each waited for; prints
         {"done": number sent}.
consume: subscribes SUBSCRIPTION (Shared, from the earliest message), receives until COUNT
         messages came or TIMEOUT_SECONDS passed, acknowledges each; prints
         {"done": [payloads received, UTF-8]}.
         Either prints {"refused": {"stage": ..., "error": ..., "message": ...}} instead when the
         client raises a Pulsar exception: `stage` is where (client, producer, send,
         subscribe, receive), `error` the exception's class (AuthorizationError,
         AuthenticationError, Timeout, ConnectError, ...).
exit:    0 done or refused; 2 bad arguments or input; 3 the `pulsar` module (pulsar-client) is
         missing; 1 any other failure (the traceback is on stderr). Only the answer goes to
         stdout.
"""

import json
import os
import sys
import time

# The C++ library under the client logs to stdout: from here on fd 1 is stderr.
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

USAGE = ("usage: secured_client.py produce URL TOPIC | "
         "consume URL TOPIC SUBSCRIPTION COUNT TIMEOUT_SECONDS (settings as JSON on stdin)")


def fail(code, message):
    print(f"secured_client.py: {message}", file=sys.stderr)
    sys.exit(code)


class Refused(Exception):
    def __init__(self, stage, error):
        super().__init__(stage)
        self.stage = stage
        self.error = error


def step(pulsar, stage, action):
    """Run action(); a Pulsar exception becomes Refused(stage, it)."""
    try:
        return action()
    except pulsar.PulsarException as error:
        raise Refused(stage, error) from error


def authentication(pulsar, auth):
    kind = auth.get("kind")
    if kind == "none":
        return None
    if kind == "token":
        return pulsar.AuthenticationToken(auth["token"])
    if kind == "tls":
        return pulsar.AuthenticationTLS(auth["certificate"], auth["key"])
    if kind == "oauth2":
        params = {"type": "client_credentials", "issuer_url": auth["issuer_url"],
                  "private_key": auth["credentials_file"]}
        for name in ("audience", "scope"):
            if auth.get(name) is not None:
                params[name] = auth[name]
        return pulsar.AuthenticationOauth2(json.dumps(params))
    fail(2, f"unknown auth kind {kind!r}: none, token, tls or oauth2")


def produce(pulsar, client, topic, payloads):
    producer = step(pulsar, "producer", lambda: client.create_producer(topic))
    for payload in payloads:
        step(pulsar, "send", lambda: producer.send(payload.encode("utf-8")))
    producer.close()
    return len(payloads)


def consume(pulsar, client, topic, subscription, count, timeout):
    consumer = step(pulsar, "subscribe", lambda: client.subscribe(
        topic,
        subscription,
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
    ))
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
        except pulsar.PulsarException as error:
            raise Refused("receive", error) from error
        payloads.append(message.data().decode("utf-8"))
        consumer.acknowledge(message)
    consumer.close()
    return payloads


def main():
    args = sys.argv[1:]
    if not ((len(args) == 3 and args[0] == "produce") or (len(args) == 6 and args[0] == "consume")):
        fail(2, USAGE)
    try:
        settings = json.load(sys.stdin)
        auth = settings["auth"]
        trust = settings.get("trust")
        timeout = int(settings.get("operation_timeout_seconds", 30))
    except (ValueError, KeyError, TypeError) as error:
        fail(2, f"stdin is not the settings object ({error!r})")
    try:
        import pulsar
    except ImportError as error:
        fail(3, f"cannot import the Pulsar Python client ({error}) with {sys.executable}")
    url, topic = args[1], args[2]
    options = dict(
        operation_timeout_seconds=timeout,
        connection_timeout_ms=min(timeout, 10) * 1000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )
    if trust is not None:
        options.update(tls_trust_certs_file_path=trust, tls_validate_hostname=True,
                       tls_allow_insecure_connection=False)
    client = None
    try:
        method = authentication(pulsar, auth)
        if method is not None:
            options["authentication"] = method
        client = step(pulsar, "client", lambda: pulsar.Client(url, **options))
        if args[0] == "produce":
            result = {"done": produce(pulsar, client, topic, list(settings.get("payloads", [])))}
        else:
            subscription, count, wait = args[3], int(args[4]), float(args[5])
            result = {"done": consume(pulsar, client, topic, subscription, count, wait)}
    except Refused as refused:
        result = {"refused": {"stage": refused.stage, "error": type(refused.error).__name__,
                              "message": str(refused.error)}}
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # a refused client may already be closed
                pass
    json.dump(result, answer)
    answer.write("\n")
    answer.flush()
    # Leave without the interpreter's shutdown, during which the C++ client's threads may run.
    os._exit(0)


if __name__ == "__main__":
    main()
