"""librdkafka's reasons in the source's and the sink's errors: the one place
that maps what librdkafka reports to the message a Spark user sees.

librdkafka reports some failures only to a client's ``error_cb``, served
while the application polls: a wrong SASL password (or an SSL handshake
refused) makes every connection fail with ``_AUTHENTICATION`` there, while
the blocking call the application made (a metadata request,
``init_transactions``, ``flush``) only times out, as "Broker transport
failure", "All broker connections are down" or "Timed out". Likewise a
fatal error (a fenced producer) is raised as "Local: Fatal error" and its
reason goes to ``error_cb``.

Contract: every client of the source and the sink gets a
:class:`ClientErrors` as its ``error_cb``. Blocking calls are made in short
slices (:func:`headrace_spark.retries.retrying`, ``flush_checking``, the
sink's ``init_transactions``); after a slice ends without an answer the
caller serves the client's callbacks and calls :meth:`ClientErrors.check`,
which raises a one-line KafkaException naming the authentication failure
as soon as one was reported (within about a second of the first refused
connection, not after the call's whole timeout). :meth:`ClientErrors.explain`
adds the remembered reason (authentication, the fatal error) to an
exception that does not say it.
"""
from __future__ import annotations

from typing import Callable, Optional

from confluent_kafka import KafkaError, KafkaException

# Errors that no retry ends: the credentials or the ACLs must change.
LOGIN_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
                         KafkaError._SSL})
AUTH_CODES = LOGIN_CODES | frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
# A newer producer initialised the same transactional.id.
FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                          KafkaError.INVALID_PRODUCER_EPOCH})
FENCED_WHY = ("another producer initialised the same transactional id: a newer attempt of "
              "this task (a retry, a speculative copy), or another query or job writing with "
              "the same sinkId or jobId")


def one_line(text: str) -> str:
    return " ".join(str(text).split())


class ClientErrors:
    """A client's ``error_cb``: remembers the last authentication or
    authorization error and the last fatal error, with their reasons."""

    def __init__(self, what: str = ""):
        self.what = what            # e.g. "the sink's producer": named in messages
        self.auth: Optional[KafkaError] = None
        self.fatal: Optional[KafkaError] = None

    def __call__(self, err: KafkaError) -> None:
        if err.code() in AUTH_CODES:
            self.auth = err
        if err.fatal():
            self.fatal = err

    def reset(self) -> None:
        """Forgets an earlier authentication failure: a call that starts now
        fails on one reported from now on (as the Java client, which does
        not retry an AuthenticationException, treats them as final)."""
        self.auth = None

    def auth_error(self) -> Optional[KafkaException]:
        """The KafkaException to fail with, if an authentication or
        authorization failure was reported."""
        if self.auth is None:
            return None
        who = f"{self.what}: " if self.what else ""
        if self.auth.code() in LOGIN_CODES:
            what = ("authentication failed", "kafka.security.protocol, kafka.sasl.* and "
                    "kafka.ssl.* options")
        else:
            what = ("authorization failed", "ACLs of the principal")
        return KafkaException(KafkaError(
            self.auth.code(),
            one_line(f"headrace: {who}{what[0]}: {self.auth.str()} (check the {what[1]})")))

    def check(self, serve: Optional[Callable[[], object]] = None) -> None:
        """Serves the client's pending callbacks (``serve``, e.g. a
        producer's ``poll(0)``), then raises the authentication failure if
        one was reported."""
        if serve is not None:
            try:
                serve()
            except KafkaException:   # a fatal producer raises its error again here
                pass
        err = self.auth_error()
        if err is not None:
            raise err

    def explain(self, exc: BaseException, extra: tuple[str, ...] = (),
                prefix: str = "") -> BaseException:
        """``exc``, or a one-line KafkaException with librdkafka's reason
        added: the authentication failure behind a time-out, the fatal
        error's reason behind "Local: Fatal error", and ``extra`` reasons,
        or for a fenced producer without them, who fences it."""
        if not isinstance(exc, KafkaException):
            return exc
        err = exc.args[0] if exc.args else None
        if not isinstance(err, KafkaError):
            return exc
        if self.auth is not None and err.code() not in AUTH_CODES:
            return self.auth_error()
        why = [err.str()]
        cause = err
        if err.code() == KafkaError._FATAL and self.fatal is not None:
            why.append(self.fatal.str())
            cause = self.fatal
        if cause.code() in FENCED_CODES and not extra:
            # (A transaction the broker aborted at its timeout fences its
            # producer too: ``extra`` then says so instead.)
            why.append(FENCED_WHY)
        why.extend(extra)
        if len(why) == 1:
            return exc
        return KafkaException(KafkaError(err.code(), one_line(prefix + "; ".join(why)),
                                         fatal=err.fatal()))
