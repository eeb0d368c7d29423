"""``headrace consume TOPIC... --share-group G [--ack accept|release|reject]``:
read as a member of share group G (KIP-932, docs/share-groups.md) with
confluent-kafka's ShareConsumer, for trying share groups by hand. Each
record printed is then acknowledged: ``accept`` (the default: done),
``release`` (delivered again, to this or another member, until the
delivery limit archives it) or ``reject`` (never delivered again). Records
acquired beyond ``--count`` are released, not printed. Stops after
``--count`` records, or once nothing arrives for ``--idle`` seconds (never
with ``--follow``). A new share group starts at the end of each partition
(``share.auto.offset.reset=latest``, Kafka's default)."""
from __future__ import annotations

import sys
import time

from headrace.cli import interrupt
from headrace.cli.common import CliError, client_settings

ACKS = ("accept", "release", "reject")
# Options of `consume` that position or pin partitions: a share group's
# broker decides what each member gets.
EXCLUDED = (("start", "--from"), ("stop", "--to"), ("partition", "--partition"),
            ("group", "--group"), ("topic_regex", "--topic-regex"))


def check_share_args(args, names: list[str], regexes: list[str]) -> None:
    """One-line CliErrors for what --share-group cannot combine with."""
    for attr, flag in EXCLUDED:
        if getattr(args, attr, None):
            raise CliError(f"--share-group cannot be combined with {flag}")
    if regexes:
        raise CliError("--share-group subscribes to topic names, not regular expressions")
    if args.idle is not None and args.idle <= 0:
        raise CliError("--idle must be > 0")


def consume_shared(args, names: list[str], render) -> int:
    """The loop: poll, print, acknowledge each printed record with --ack,
    release the rest past --count, commit; ``render(msgs) -> bytes``."""
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

    from headrace.admin import client_config, describe_error

    kind = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
            "reject": AcknowledgeType.REJECT}[args.ack]
    conf = {"group.id": args.share_group, "share.acknowledgement.mode": "explicit",
            **client_settings(args)}
    consumer = ShareConsumer(client_config(args.brokers, **conf))
    out = sys.stdout.buffer
    left = args.count
    idle = args.idle if args.idle is not None else 5.0
    last = time.monotonic()
    try:
        consumer.subscribe(names)
        while (left is None or left > 0) and not interrupt.requested():
            try:
                msgs = list(consumer.poll(0.2))
            except KafkaException as e:
                raise CliError(f"share group {args.share_group}: {describe_error(e)}") from None
            for m in msgs:
                if m.error() is not None:
                    raise CliError(f"share group {args.share_group}: "
                                   f"{describe_error(m.error())}")
            if not msgs:
                if not args.follow and time.monotonic() - last > idle:
                    break
                continue
            last = time.monotonic()
            shown = msgs if left is None else msgs[:left]
            out.write(render(shown))
            if args.follow:
                out.flush()
            for m in shown:
                consumer.acknowledge(m, kind)
            for m in msgs[len(shown):]:
                consumer.acknowledge(m, AcknowledgeType.RELEASE)
            consumer.commit_sync()
            if left is not None:
                left -= len(shown)
    finally:
        out.flush()
        consumer.close()
    return 0
