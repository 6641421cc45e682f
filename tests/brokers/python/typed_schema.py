#!/usr/bin/env python3
"""A typed producer or consumer of the official Python client (pulsar-client 3.13.0), with a
registered schema, for the live schema tests (tests/tests/live_schemas.rs).

    python3 typed_schema.py produce URL TOPIC KIND < input.json
    python3 typed_schema.py consume URL TOPIC SUBSCRIPTION KIND COUNT < input.json

KIND:   avro (AvroSchema), json (JsonSchema) or protobuf (ProtobufNativeSchema), all of one
        record, Refund: id (long) and reason (string), both required.
stdin:  a JSON object: "records", a list of {"id": int, "reason": str} to publish (produce);
        "descriptor", for protobuf, the base64 FileDescriptorSet that defines the message
        "message" (its full name), from which the message class is built at run time, as
        protoc's generated code would define it.
stdout: produce: a JSON list of the published message ids (str); consume: a JSON list of the
        COUNT records received, as {"id", "reason"}, from the earliest message, each
        acknowledged. Nothing else is written to stdout: the client's logging goes to stderr.
exit:   0 done; 2 bad arguments or input; 3 a module is missing (pulsar-client with its avro
        extra, protobuf); 4 the broker refused the producer or the subscription (the reason on
        stderr); 5 fewer than COUNT records within 60 s; 1 any other failure.
"""

import base64
import json
import os
import sys

# The C++ library under the client logs to stdout: from here on fd 1 is stderr, and only the
# answer goes to the real stdout.
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


def fail(code, message):
    print(f"typed_schema.py: {message}", file=sys.stderr)
    sys.exit(code)


def schema_of(kind, spec):
    """The client's schema object for KIND, and how to build a record and read one back."""
    try:
        import pulsar.schema as ps
    except ImportError as error:
        fail(3, f"cannot import pulsar.schema ({error}); pip install 'pulsar-client[avro]==3.13.0'")
    if kind in ("avro", "json"):

        class Refund(ps.Record):
            id = ps.Long(required=True)
            reason = ps.String(required=True)

        try:
            schema = ps.AvroSchema(Refund) if kind == "avro" else ps.JsonSchema(Refund)
        except Exception as error:  # the client raises a bare Exception without fastavro
            fail(3, f"{error}")
        return schema, lambda r: Refund(id=r["id"], reason=r["reason"])
    if kind == "protobuf":
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        except ImportError as error:
            fail(3, f"cannot import google.protobuf ({error}); pip install 'protobuf>=6,<7'")
        if "descriptor" not in spec or "message" not in spec:
            fail(2, "protobuf needs \"descriptor\" (base64 FileDescriptorSet) and \"message\"")
        files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(spec["descriptor"]))
        pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            pool.Add(file)
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(spec["message"]))
        return ps.ProtobufNativeSchema(cls), lambda r: cls(id=r["id"], reason=r["reason"])
    fail(2, f"unknown KIND {kind!r}: avro, json or protobuf")


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[0] not in ("produce", "consume"):
        fail(2, "usage: typed_schema.py produce URL TOPIC KIND | consume URL TOPIC SUB KIND COUNT")
    mode, url, topic = args[0], args[1], args[2]
    try:
        spec = json.load(sys.stdin)
    except ValueError as error:
        fail(2, f"stdin is not JSON ({error})")
    try:
        import pulsar
    except ImportError as error:
        fail(3, f"cannot import the Pulsar Python client ({error}) with {sys.executable}")

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        if mode == "produce":
            schema, build = schema_of(args[3], spec)
            try:
                producer = client.create_producer(topic, schema=schema)
            except Exception as error:
                fail(4, f"the broker refused the producer: {error}")
            ids = [str(producer.send(build(r))) for r in spec.get("records", [])]
            producer.close()
            json.dump(ids, answer)
        else:
            if len(args) != 6:
                fail(2, "usage: typed_schema.py consume URL TOPIC SUBSCRIPTION KIND COUNT")
            subscription, count = args[3], int(args[5])
            schema, _ = schema_of(args[4], spec)
            try:
                consumer = client.subscribe(
                    topic,
                    subscription,
                    schema=schema,
                    initial_position=pulsar.InitialPosition.Earliest,
                )
            except Exception as error:
                fail(4, f"the broker refused the subscription: {error}")
            records = []
            while len(records) < count:
                try:
                    message = consumer.receive(timeout_millis=60000)
                except Exception as error:
                    fail(5, f"{len(records)} of {count} records within 60 s ({error})")
                value = message.value()
                records.append({"id": int(value.id), "reason": str(value.reason)})
                consumer.acknowledge(message)
            consumer.close()
            json.dump(records, answer)
        answer.write("\n")
        answer.flush()
    finally:
        client.close()


if __name__ == "__main__":
    main()
