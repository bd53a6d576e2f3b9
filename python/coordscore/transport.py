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

`https://` relays are checked against the system's trust store (chain, dates, host name), as
Python's default SSL context does; a private certificate authority is added by naming its PEM
file in `SSL_CERT_FILE` (which replaces the system bundle) or a hashed directory in
`SSL_CERT_DIR`. A refused certificate raises `CertificateRefused` with one sentence saying
why: a wrong host name, expired, not yet valid, self-signed, or an unknown authority.
"""
from __future__ import annotations

import http.client
import os
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Optional, Union

from .app import App
from .records import HostAnswer, HostRequest, OutboxReport, Request, Sent

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


class CertificateRefused(RelayUnreachable):
    """The relay's TLS certificate was refused; the message says why and what to do."""


_TRUST_ADVICE = "to trust a private certificate authority, name its PEM file in SSL_CERT_FILE"


def _certificate_reason(error: ssl.SSLCertVerificationError, host: str) -> str:
    """One sentence for a refused certificate, from OpenSSL's verification code."""
    code = error.verify_code
    if code == 62:  # X509_V_ERR_HOSTNAME_MISMATCH (and 64, IP_ADDRESS_MISMATCH)
        return f"the relay's certificate is not valid for {host} (check the host name you connect to)"
    if code == 64:
        return f"the relay's certificate is not valid for {host} (check the address you connect to)"
    if code == 10:  # CERT_HAS_EXPIRED
        return "the relay's certificate has expired (renew it on the server, or check this computer's clock)"
    if code == 9:  # CERT_NOT_YET_VALID
        return "the relay's certificate is not valid yet (check this computer's clock)"
    if code in (18, 19):  # DEPTH_ZERO_SELF_SIGNED_CERT, SELF_SIGNED_CERT_IN_CHAIN
        return f"the relay's certificate is self-signed, so nothing vouches for it; {_TRUST_ADVICE}"
    if code in (2, 20, 21):  # UNABLE_TO_GET_ISSUER_CERT(_LOCALLY), UNABLE_TO_VERIFY_LEAF_SIGNATURE
        return f"the relay's certificate is issued by an authority this computer does not trust; {_TRUST_ADVICE}"
    return f"the relay's certificate was refused ({error.verify_message}); {_TRUST_ADVICE}"


class AnswerTooLarge(TransportError):
    """The answer's body is longer than the request allows (`max_response_bytes`)."""


@dataclass(frozen=True)
class Answer:
    """A relay's answer: the status (a 3xx is returned as is, never followed) and the body."""
    status: int
    body: bytes
    retry_after: Optional[str] = None
    """The answer's Retry-After header, if any (429, 5xx)."""


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
    cap = request.max_response_bytes if request.max_response_bytes is not None else DEFAULT_MAX_RESPONSE_BYTES
    body = bytearray()
    retry_after: list[Optional[str]] = [None]

    def head(status: int, headers: http.client.HTTPMessage) -> None:
        retry_after[0] = headers.get("Retry-After")

    status = _exchange(request, cap, head, body.extend, connect_timeout, idle_timeout, total_timeout)
    return Answer(status, bytes(body), retry_after[0])


def _exchange(request: Request, cap: int, on_head: Callable[[int, http.client.HTTPMessage], None], on_chunk: Callable[[bytes], None],
              connect_timeout: float, idle_timeout: float, total_timeout: float) -> int:
    """Sends `request`, hands the answer's status and headers to `on_head`, then its body to
    `on_chunk` piece by piece (never more than `cap` bytes in all); returns the status."""
    url = urllib.parse.urlsplit(request.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"not an http(s) URL: {request.url!r}")
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
            on_head(response.status, response.headers)
            taken = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RelayUnreachable(f"no complete answer within {total_timeout:g} s")
                sock.settimeout(min(idle_timeout, left))
                chunk = response.read1(min(65536, cap + 1 - taken))
                if not chunk:
                    break
                taken += len(chunk)
                if taken > cap:
                    raise AnswerTooLarge(f"the relay answered more than {cap} bytes")
                on_chunk(chunk)
            return response.status
        except (socket.timeout, TimeoutError) as error:
            if time.monotonic() >= deadline:
                raise RelayUnreachable(f"no complete answer within {total_timeout:g} s") from error
            raise RelayUnreachable(f"the relay was silent for {idle_timeout:g} s") from error
        except ssl.SSLCertVerificationError as error:
            raise CertificateRefused(f"cannot reach {url.scheme}://{url.netloc}: {_certificate_reason(error, url.hostname)}") from error
        except (OSError, http.client.HTTPException) as error:
            raise RelayUnreachable(f"cannot reach {url.scheme}://{url.netloc}: {error}") from error
    finally:
        connection.close()


_BATCH = 1 << 20
"""Body bytes save_file hands to FileDownload.take at once."""


class _TooSlow(TransportError):
    """An answer the core's transfer rule cut off: it brought too little for too long."""


class _Busy(TransportError):
    """A 429 or 5xx answer to a download: the core says to wait `wait` seconds and ask again."""

    def __init__(self, status: int, wait: int) -> None:
        super().__init__(f"the relay answered {status}")
        self.status = status
        self.wait = wait


def send_file(app: "App", friend_id: str, path: str, type: str = "application/octet-stream", name: Optional[str] = None,
              caption: str = "") -> "Sent":
    """Uploads the file at `path` sealed to our relay, part by part (at most 4 MiB in memory),
    continuing after a lost connection or a relay restart from where the relay's bytes end, then
    queues the file message for `friend_id` and returns it (deliver it with deliver_outbox, or
    send `.request`). `name` defaults to the file's base name.

    Raises RelayUnreachable when the core's transfer rule gives up (14 failed tries in a row, or
    the upload's deadline; PROTOCOL.md §12.5), WireError when the
    relay refuses the file (ERR_RELAY_ERROR, e.g. the quota) or answers what no honest relay would,
    ArgumentError (ERR_FILE_IO), ManagerError (unknown or blocked friend)."""
    with open(path, "rb") as file, app.begin_upload(file.fileno()) as upload:
        probe = False

        def pause(retry_after: int, failure: Exception) -> None:
            """The core's transfer rule decides how long to wait, or that the upload gives up."""
            wait, why = upload.failed(retry_after)
            if not wait:
                raise RelayUnreachable(f"the upload failed ({why}): {failure}") from failure
            time.sleep(wait)

        while True:
            request = upload.probe() if probe else upload.next()
            if request is None:
                break
            try:
                answer = send(request, total_timeout=float(min(120, upload.seconds_left())))
            except TransportError as lost:
                pause(0, lost)
                probe = True  # the part may or may not be stored: ask the relay where its bytes end
                continue
            probe = False
            wait = upload.process(answer.status, answer.body, answer.retry_after)
            if wait:
                pause(wait, RelayUnreachable(f"the relay kept asking to wait ({answer.status})"))
        return upload.send(friend_id, type, os.path.basename(path) if name is None else name, caption)


def save_file(app: "App", message_id: str, path: str, *, overwrite: bool = False) -> str:
    """Downloads message `message_id`'s attachment from the sender's relay into `path`: written
    to a temporary file beside it (`.coords-<16 hex>.part`, 0600, a fixed-length name so a
    255-byte file name still fits) chunk by chunk as they open, resumed with Range after a
    lost connection, fsynced and renamed to `path` only after the digest matched; removed on any
    error. Returns `path`.

    Raises FileExistsError (without `overwrite`), WireError (a relay serving other, cut,
    reordered or extra bytes: ERR_BAD_CHUNK, ERR_OBJECT_MISMATCH, or 404 gone), AnswerTooLarge
    (more bytes than the object), RelayUnreachable when the core's transfer rule gives up (14
    failed tries in a row without progress — unreachable, cut off, too slow, 429 or 5xx — or the
    download's deadline), ManagerError (ERR_UNKNOWN_MESSAGE, ERR_NO_ATTACHMENT)."""
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(f"{path} exists")
    temporary = os.path.join(os.path.dirname(path), f".coords-{os.urandom(8).hex()}.part")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    done = False
    try:
        with app.begin_download(message_id, fd) as download:

            def pause(retry_after: int, failure: Exception) -> None:
                """The core's transfer rule decides how long to wait, or that the download gives up."""
                wait, why = download.failed(retry_after)
                if not wait:
                    raise RelayUnreachable(f"the download failed ({why}): {failure}") from failure
                time.sleep(wait)

            while True:
                request, maximum = download.request()

                def head(status: int, headers: http.client.HTTPMessage) -> None:
                    wait = download.check(status, headers.get("Retry-After"), headers.get("Content-Length"))
                    if wait:
                        raise _Busy(status, wait)  # the core's decision: this body is not read

                # Handed on in pieces of 1 MiB: one call per piece, not per socket read.
                pending = bytearray()

                def flush() -> None:
                    if pending:
                        piece = bytes(pending)
                        pending.clear()
                        download.take(piece)

                def take(piece: bytes) -> None:
                    if not download.pace(len(piece)):
                        raise _TooSlow("the relay sends too slowly (under 16 KiB in 30 s)")
                    pending.extend(piece)
                    if len(pending) >= _BATCH:
                        flush()

                try:
                    _exchange(request, maximum, head, take, CONNECT_TIMEOUT, IDLE_TIMEOUT, float(download.seconds_left()))
                    flush()
                except AnswerTooLarge:
                    raise
                except _Busy as busy:
                    pause(busy.wait, RelayUnreachable(f"the relay kept answering {busy.status}"))
                    continue
                except TransportError as lost:
                    flush()  # chunks opened before the break stay; the next request resumes after them
                    pause(0, lost)
                    continue
                if download.finish():
                    break
                pause(0, RelayUnreachable("the download kept breaking off"))
        os.replace(temporary, path)
        done = True
        return path
    finally:
        os.close(fd)
        if not done:
            os.unlink(temporary)


def deliver_outbox(app: "App", *, ignore_backoff: bool = False) -> list[OutboxReport]:
    """Sends every request of `app`'s outbox that is due and hands each answer to the core
    (App.outbox_report), which decides what it means; returns the decisions. A transport failure
    is reported as status 0 with its description. The host's whole delivery loop is:

        reports = deliver_outbox(app)
        wake = app.outbox_next_wake()   # sleep until then (None: until something is queued)

    Raises StoreError from the core; never a TransportError (those are answers too)."""
    return [app.outbox_report(entry.id, *_perform(entry.request)) for entry in app.outbox_due(ignore_backoff)]


def _perform(request: Request) -> tuple[int, bytes]:
    """The status and body of `request`, or status 0 and the transport failure's description
    (what the core's report calls take for a request that got no answer)."""
    try:
        answer = send(request)
    except TransportError as error:
        return 0, str(error).encode()
    return answer.status, answer.body


def run_once(app: "App", now_ms: Optional[int] = None) -> list[tuple[HostRequest, HostAnswer]]:
    """One turn of the host loop: performs every request App.due() hands out, on this thread,
    one after the other, and hands each answer to App.report(); returns what the core made of
    each. A transport failure is reported as status 0 with its description. The whole host is:

        while running:
            run_once(app)
            wake = app.next_wake()   # sleep until then, or until a push / live notice
                                     # (then app.fetch_now()); None: until the user acts

    Raises StoreError from the core; never a TransportError (those are answers too)."""
    return [(item, app.report(item.id, *_perform(item.request))) for item in app.due(now_ms)]


def run(app: "App", *, until: Callable[[], bool], longest_sleep: float = 60.0) -> None:
    """Runs the host loop on this thread until `until()` is true: run_once, then sleep until
    App.next_wake() (at most `longest_sleep` seconds, so `until` is looked at; a host woken by
    push or a live notice calls App.fetch_now() and runs a turn at once instead).

    Raises StoreError from the core."""
    while not until():
        run_once(app)
        wake = app.next_wake()
        now = time.time() * 1000
        delay = longest_sleep if wake is None else max(0.0, min(longest_sleep, (wake - now) / 1000))
        if delay > 0:
            time.sleep(delay)


__all__ = ["Answer", "AnswerTooLarge", "CertificateRefused", "RelayUnreachable", "TransportError", "deliver_outbox", "run", "run_once",
           "save_file", "send", "send_file",
           "CONNECT_TIMEOUT", "IDLE_TIMEOUT", "TOTAL_TIMEOUT", "DEFAULT_MAX_RESPONSE_BYTES"]
