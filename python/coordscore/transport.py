"""A reference HTTP transport for the requests the library prepares, with the limits every
CoordsCore host applies to a relay's answers (PROTOCOL.md §4.1): connect within 5 s, no more
than 15 s of silence while reading, the whole request within 30 s, at most
`request.max_response_bytes` of body, and redirects never followed (a 3xx is the answer).

    import coordscore as cc
    from coordscore.transport import send
    for request in app.prepare_fetches():
        answer = send(request)                      # raises RelayUnreachable / AnswerTooLarge
        if answer.status == 200:
            app.process_fetch_response(answer.body)

The library itself does no I/O; this module is the standard library's `http.client` with those
limits, for hosts that have no HTTP stack of their own. It never holds more than the cap in
memory, whatever the relay sends.
"""
from __future__ import annotations

import http.client
import socket
import time
import urllib.parse
from dataclasses import dataclass
from typing import Union

from . import App, OutboxReport, Request

CONNECT_TIMEOUT = 5.0
"""Seconds to establish the TCP (and TLS) connection (ClientLimits.connectTimeout)."""
IDLE_TIMEOUT = 15.0
"""Seconds without a byte while reading the answer (ClientLimits.silenceTimeout)."""
TOTAL_TIMEOUT = 30.0
"""Seconds for the whole request, body included (ClientLimits.requestTimeout)."""
DEFAULT_MAX_RESPONSE_BYTES = 65536
"""The cap for a request that names none (any answer but a fetch or a mailbox list)."""


class TransportError(Exception):
    """The relay could not be asked or did not answer acceptably; nothing was processed."""


class RelayUnreachable(TransportError):
    """No connection, no answer, or no complete answer within the deadlines."""


class AnswerTooLarge(TransportError):
    """The answer's body is longer than the request allows (`max_response_bytes`)."""


@dataclass(frozen=True)
class Answer:
    """A relay's answer: the status (a 3xx is returned as is, never followed) and the body."""
    status: int
    body: bytes


def send(request: Union[Request, dict[str, object]], *, connect_timeout: float = CONNECT_TIMEOUT,
         idle_timeout: float = IDLE_TIMEOUT, total_timeout: float = TOTAL_TIMEOUT) -> Answer:
    """Sends a prepared request and returns the relay's answer, within the §4.1 limits.

    Raises RelayUnreachable (no connection; silent for `idle_timeout`; not complete within
    `total_timeout`; a malformed HTTP answer), AnswerTooLarge (more body than
    `request.max_response_bytes`, or 64 KiB when it names none), TypeError for anything but a
    Request or its JSON dict, ValueError for a URL that is not http(s)."""
    if isinstance(request, dict):
        request = Request.from_json(request)
    if not isinstance(request, Request):
        raise TypeError(f"request must be a coordscore.Request, got {type(request).__name__}")
    url = urllib.parse.urlsplit(request.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"not an http(s) URL: {request.url!r}")
    cap = request.max_response_bytes if request.max_response_bytes is not None else DEFAULT_MAX_RESPONSE_BYTES
    started = time.monotonic()
    deadline = started + total_timeout
    target = url.path or "/"
    if url.query:
        target += "?" + url.query
    connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(url.hostname, url.port, timeout=connect_timeout)
    try:
        try:
            connection.connect()
            sock = connection.sock  # kept: http.client drops its reference once an answer says "close"
            if sock is None:
                raise RelayUnreachable(f"cannot reach {url.scheme}://{url.netloc}")
            sock.settimeout(min(idle_timeout, max(0.001, deadline - time.monotonic())))
            headers = {str(name): str(value) for name, value in request.headers.items()}
            connection.request(request.method, target, body=request.body or None, headers=headers)
            response = connection.getresponse()
            body = bytearray()
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RelayUnreachable(f"no complete answer within {total_timeout:g} s")
                sock.settimeout(min(idle_timeout, left))
                chunk = response.read1(min(65536, cap + 1 - len(body)))
                if not chunk:
                    break
                body += chunk
                if len(body) > cap:
                    raise AnswerTooLarge(f"the relay answered more than {cap} bytes")
            return Answer(response.status, bytes(body))
        except (socket.timeout, TimeoutError) as error:
            if time.monotonic() >= deadline:
                raise RelayUnreachable(f"no complete answer within {total_timeout:g} s") from error
            raise RelayUnreachable(f"the relay was silent for {idle_timeout:g} s") from error
        except (OSError, http.client.HTTPException) as error:
            raise RelayUnreachable(f"cannot reach {url.scheme}://{url.netloc}: {error}") from error
    finally:
        connection.close()


def deliver_outbox(app: "App", *, ignore_backoff: bool = False) -> list[OutboxReport]:
    """Sends every request of `app`'s outbox that is due and hands each answer to the core
    (App.outbox_report), which decides what it means; returns the decisions. A transport failure
    is reported as status 0 with its description. The host's whole delivery loop is:

        reports = deliver_outbox(app)
        wake = app.outbox_next_wake()   # sleep until then (None: until something is queued)

    Raises StoreError from the core; never a TransportError (those are answers too)."""
    reports = []
    for entry in app.outbox_due(ignore_backoff):
        try:
            answer = send(entry.request)
            status, body = answer.status, answer.body
        except TransportError as error:
            status, body = 0, str(error).encode()
        reports.append(app.outbox_report(entry.id, status, body))
    return reports


__all__ = ["Answer", "AnswerTooLarge", "RelayUnreachable", "TransportError", "deliver_outbox", "send", "CONNECT_TIMEOUT",
           "IDLE_TIMEOUT", "TOTAL_TIMEOUT", "DEFAULT_MAX_RESPONSE_BYTES"]
