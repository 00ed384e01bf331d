"""One bounded, reported wait for every network call ffnlab makes.

ffnlab reaches the network only through ``huggingface_hub`` (Hub ids: ``audit``, ``fit``, ``size
--from``, ``probe``, ``perplexity``, ``table``) and ``datasets`` (``hf:`` corpora, ``perplexity
--dataset ORG/NAME``), which share ``huggingface_hub``'s HTTP client. :func:`bounded` wraps one such call:

* **time to connect and time a transfer may stall** are both :func:`timeout` seconds (``--timeout``,
  else ``FFNLAB_TIMEOUT``, else 10 s), for every request (a library's own shorter bound stays).
  The length of a large download is not bounded: only a gap with no byte is.
* **no silent retries**: a request that times out, cannot connect or gets a server error (5xx,
  408, 429) is tried once. The library still falls back to a cached copy then; a second request
  for the same URL in the same call (the library's retries, 5 of them with back-off: up to ~394 s
  against a Hub that accepts connections and never answers, 23 s against one answering 500) is
  refused at once, and the call fails with one line saying what happened: a timeout, a refused
  connection or a server error (a missing repo or file keeps its own message). A failed answer's
  ``Retry-After`` (and rate-limit) headers are dropped, so the library does not sleep the wait
  they ask for (``Retry-After: 100000``: 28 hours) before the retry that is refused; the error
  line names the wait asked for.
* **progress**: a request still unanswered after :func:`progress_after` seconds prints one stderr
  line naming the host and the timeout (once per host).

The files the Hub serves through its Xet storage (large weights of repos on huggingface.co) are
fetched by ``hf_xet``, outside this HTTP client: their stalls are ``hf_xet``'s own.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ffnlab.errors import FfnlabError

DEFAULT_TIMEOUT = 10.0  # seconds to connect, and seconds a transfer may go without a byte
MAX_TIMEOUT = 600.0
TIMEOUT_ENV = "FFNLAB_TIMEOUT"
TIMEOUT_HELP = (f"Seconds to wait for the Hub to connect, and for a transfer that stalls, before failing "
                f"(default {DEFAULT_TIMEOUT:g}, or {TIMEOUT_ENV}); a long download that keeps moving is not cut.")
RETRY_STATUS = (408, 429)  # besides 5xx: answers the library would wait and retry on

_timeout: float | None = None  # --timeout of this process's command, None: FFNLAB_TIMEOUT or the default
_current: Wait | None = None  # the wait in progress (module-wide: the libraries' worker threads share it)
_announced: set[str] = set()
_installed = False
_lock = threading.Lock()


def check_timeout(value: Any, where: str = "--timeout") -> float:
    """``value`` as a timeout in seconds: a finite number in (0, 600]."""
    from ffnlab.validation import number

    return number(value, where, 0, MAX_TIMEOUT, lo_open=True)


def set_timeout(seconds: float | None) -> None:
    """The timeout of every later network call of this process (None: FFNLAB_TIMEOUT or 10 s)."""
    global _timeout
    _timeout = None if seconds is None else check_timeout(seconds)


def timeout() -> float:
    """Seconds to connect and seconds a transfer may stall: ``--timeout``, FFNLAB_TIMEOUT or 10."""
    if _timeout is not None:
        return _timeout
    env = os.environ.get(TIMEOUT_ENV, "").strip()
    return check_timeout(env, TIMEOUT_ENV) if env else DEFAULT_TIMEOUT


def progress_after(seconds: float) -> float:
    """How long a request waits unanswered before the progress line (a tenth of the timeout, at most 1 s)."""
    return min(1.0, seconds / 10)


class GaveUp(Exception):  # noqa: N818 - not an error of the user's: the library's retry, refused
    """Raised into the HTTP library for a request made after the wait's first failure: not one of
    the exceptions it retries on, so it ends the call at once."""


@dataclass
class Wait:
    """One network call: what it fetches, its timeout, the requests that failed (url -> message) and
    whether the last request made failed (the message then explains the call's failure)."""

    what: str
    seconds: float
    failed: dict[str, str] = field(default_factory=dict)
    last_failed: str | None = None
    last_answer: str | None = None  # the status line of the last response, e.g. "204 No Content"
    max_bytes: int | None = None  # the most a file of this call may hold (None: no bound)
    over_limit: bool = False  # the call was stopped at max_bytes (announced, or sent past it)

    def fail(self, url: str, message: str) -> None:
        self.failed.setdefault(url, f"{self.what}: {message}")
        self.last_failed = self.failed[url]


@contextlib.contextmanager
def bounded(what: str, max_bytes: int | None = None) -> Iterator[Wait]:
    """Run one network call (``what``: e.g. ``org/name config.json``) as described in the module
    docstring; a failure of the wait becomes one :class:`ffnlab.errors.FfnlabError` line. With
    ``max_bytes``, a response announcing a larger file (its Content-Length, or the Hub's
    X-Linked-Size) is refused before its body is read, and a body that sends more than that
    (announcing no length, or a false one) is stopped there (:func:`_over_limit`)."""
    global _current
    from ffnlab.files import check_hf_home

    check_hf_home()  # before huggingface_hub is imported: it reads its cache folder then
    check_endpoint()
    install()
    wait = Wait(what, timeout(), max_bytes=max_bytes)
    outer, _current = _current, wait
    library = _library_timeouts(wait.seconds)
    try:
        yield wait
    except Exception:
        if wait.last_failed is not None:  # the last request timed out, broke or got a server error
            raise FfnlabError(wait.last_failed) from None
        raise
    finally:
        _current = outer
        _library_timeouts(*library)


def _library_timeouts(etag: float, download: float | None = None) -> tuple[float, float]:
    """Set ``huggingface_hub``'s metadata and download timeouts (so that a --timeout above its 10 s
    reaches its requests too); return the previous ones."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return etag, etag if download is None else download
    before = (constants.HF_HUB_ETAG_TIMEOUT, constants.HF_HUB_DOWNLOAD_TIMEOUT)
    constants.HF_HUB_ETAG_TIMEOUT = etag  # type: ignore[assignment]
    constants.HF_HUB_DOWNLOAD_TIMEOUT = etag if download is None else download  # type: ignore[assignment]
    return before


def install() -> None:
    """Put the bounded transport under ``huggingface_hub``'s shared HTTP client (once)."""
    global _installed
    with _lock:
        if _installed:
            return
        try:
            from huggingface_hub.utils import _http as hf_http
        except ImportError:  # no huggingface_hub: nothing of ffnlab's reaches the network
            return
        default = getattr(hf_http, "default_client_factory", None)
        setter = getattr(hf_http, "set_client_factory", None)
        if default is None or setter is None:
            raise FfnlabError("this huggingface_hub has no set_client_factory: pip install -U 'huggingface_hub>=1.0'")

        def factory() -> Any:
            client = default()
            client._transport = BoundedTransport(client._transport)
            client._mounts = {k: (None if t is None else BoundedTransport(t)) for k, t in client._mounts.items()}
            return client

        setter(factory)
        _installed = True


def _http() -> Any:
    """The HTTP library ``huggingface_hub`` uses (``httpx2``; ``httpx`` before it)."""
    from huggingface_hub.utils import _http as hf_http

    return getattr(hf_http, "httpx2", None) or getattr(hf_http, "httpx")  # noqa: B009


def redact(url: Any) -> str:
    """``url`` with any user name and password (``http://user:secret@host``) left out."""
    return re.sub(r"//.*@", "//", str(url))  # up to the last @: a password may hold / ? or #


def host_of(url: Any) -> str:
    """The host (and port) ``url`` names, never its user name or password."""
    try:
        parts = urlsplit(str(url))
        host, port = parts.hostname, parts.port
    except ValueError:
        return redact(url)
    if not host:
        return redact(url)
    host = f"[{host}]" if ":" in host else host
    return host if port is None else f"{host}:{port}"


def check_endpoint() -> None:
    """Refuse an ``HF_ENDPOINT`` that is not an http(s) URL with a host, in one line (before
    ``huggingface_hub`` parses it and raises its own ValueError), its password left out."""
    raw = os.environ.get("HF_ENDPOINT")
    if not raw:
        return
    shown = redact(raw)[:200]
    try:  # read as huggingface_hub reads it at import
        parts = urlsplit(raw)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:  # its message may quote a password: not shown
        raise FfnlabError(f"HF_ENDPOINT {shown!r} is not a URL: its host or port cannot be read (a password "
                          "holding / ? or # must be percent-encoded)") from None
    if parts.query or parts.fragment:
        raise FfnlabError(f"HF_ENDPOINT {shown.split('?')[0].split('#')[0]!r} has a query or fragment "
                          "(?... or #...); give the server's URL alone")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FfnlabError(f"HF_ENDPOINT {redact(raw)[:200]!r} is not a Hub URL: the protocol must be http or "
                          "https, followed by a host")


class BoundedTransport:
    """An HTTP transport around the library's own: every request under :func:`timeout`, failures
    recorded on the current :class:`Wait`, requests after one refused (:class:`GaveUp`)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __enter__(self) -> BoundedTransport:
        self._inner.__enter__()
        return self

    def __exit__(self, *args: Any) -> None:
        self._inner.__exit__(*args)

    def close(self) -> None:
        self._inner.close()

    def handle_request(self, request: Any) -> Any:
        httpx = _http()
        wait = _current
        seconds = wait.seconds if wait is not None else timeout()
        host = host_of(request.url)
        url = str(request.url.copy_with(query=None))
        if wait is not None:
            if url in wait.failed:  # the library retrying what already failed once: not again
                wait.last_failed = wait.failed[url]
                raise GaveUp(wait.failed[url])
            wait.last_failed = None
        asked = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {  # ours, or a shorter one the library asked for (its 3 s telemetry call)
            phase: seconds if not isinstance(asked.get(phase), (int, float)) else min(seconds, asked[phase])
            for phase in ("connect", "read", "write", "pool")}
        limit = request.extensions["timeout"]
        timer = threading.Timer(progress_after(seconds), _announce, (host, seconds, wait))
        fail = functools.partial(_fail, wait, url)
        timer.daemon = True
        timer.start()
        try:
            response = self._inner.handle_request(request)
        except httpx.ConnectTimeout:
            fail(f"the Hub at {host} did not accept a connection within {limit['connect']:g} s (--timeout)")
            raise
        except httpx.TimeoutException:
            fail(f"the Hub at {host} did not answer within {limit['read']:g} s (--timeout): timed out")
            raise
        except httpx.ConnectError as exc:
            fail(f"cannot connect to the Hub at {host}: {_line(exc)}")
            raise
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            fail(f"the connection to the Hub at {host} broke: {_line(exc)}")
            raise
        finally:
            timer.cancel()
        status = response.status_code
        if wait is not None:
            wait.last_answer = f"{status} {response.reason_phrase or ''}".strip()
        if status >= 500 or status in RETRY_STATUS:
            kind = "a server error" if status >= 500 else "busy: try again later"
            asked = _drop_wait_headers(response.headers)
            kind += f"; it asked for a wait of {asked}" if asked else ""
            fail(f"the Hub at {host} answered {status} {response.reason_phrase or ''} ({kind})".replace("  ", " "))
        announced = _announced_size(response.headers, status)
        coding = _coding(response.headers)
        if wait is not None and wait.max_bytes is not None:
            if announced is not None and announced > wait.max_bytes:
                response.close()  # its body is never read
                raise _over_limit(wait, fail, f"the Hub announces {announced:,} bytes, over the "
                                              f"{wait.max_bytes:,}-byte limit for such files; nothing was downloaded")
            if coding not in DECODED_SIZE:
                response.close()
                raise _over_limit(wait, fail, f"the Hub sent the file encoded as {str(coding)[:60]!r}, which ffnlab "
                                              f"cannot count against the {wait.max_bytes:,}-byte limit for such files "
                                              f"(it counts {', '.join(c for c in DECODED_SIZE if c)}); nothing was "
                                              "downloaded")
        response.stream = _stall_reported()(response.stream, host, seconds, fail, wait, coding)
        return response


# the content codings whose decoded size a limited download counts (zlib's window bits for each;
# None: no coding, the bytes sent are the file's): the HTTP library decodes the body above this
# transport, so the limit on what is written is a limit on the decoded bytes
DECODED_SIZE: dict[str | None, int | None] = {None: None, "gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16,
                                              "deflate": zlib.MAX_WBITS}


def _coding(headers: Any) -> str | None:
    """A response's Content-Encoding, lower case, ``identity`` left out (None: the body is the
    file's bytes); several codings stay one string, which :data:`DECODED_SIZE` does not hold."""
    raw = headers.get("content-encoding")
    codings = [c.strip().lower() for c in str(raw or "").split(",") if c.strip().lower() not in ("", "identity")]
    return ", ".join(codings) or None


class DecodedSize:
    """The size a body sent with a content coding of :data:`DECODED_SIZE` decodes to, counted chunk
    by chunk as it arrives and never kept (at most ``STEP`` decoded bytes at a time), so that a
    few KB that inflate to gigabytes are stopped at the limit, before the library decodes them."""

    STEP = 2**20

    def __init__(self, coding: str) -> None:
        bits = DECODED_SIZE[coding]
        assert bits is not None  # a coding, not the plain body
        self._bits = bits
        self._inflate = zlib.decompressobj(self._bits)
        self._first = True
        self._broken = False

    def count(self, data: bytes, most: int) -> int:
        """The decoded bytes of ``data``, the next chunk of the body; stops once past ``most``."""
        n = 0
        while data and not self._broken and n <= most:
            try:
                out = self._inflate.decompress(data, self.STEP)
            except zlib.error:
                if self._first and self._bits == zlib.MAX_WBITS:  # "deflate" sent raw, as the library reads it too
                    self._bits, self._inflate = -zlib.MAX_WBITS, zlib.decompressobj(-zlib.MAX_WBITS)
                    self._first = False
                    continue
                self._broken = True  # the library's decoder refuses the body itself
                break
            self._first = False
            n += len(out)
            data = self._inflate.unconsumed_tail
        return n


def _announced_size(headers: Any, status: int) -> int | None:
    """The size of the file a response announces: the Hub's X-Linked-Size (on a redirect to the
    file's storage too), else a successful answer's Content-Length unless the body is encoded
    (gzip: the length sent, not the file's); None when neither is a number."""
    plain = _coding(headers) is None
    for name, ok in (("x-linked-size", True), ("content-length", 200 <= status < 300 and plain)):
        raw = headers.get(name)
        if ok and raw is not None and str(raw).strip().isdigit():
            return int(str(raw).strip())
    return None


def _over_limit(wait: Wait, fail: Callable[[str], None], message: str) -> GaveUp:
    """The wait's refusal of a file over its ``max_bytes``: recorded as the call's failure (its
    one line), marked, and raised as :class:`GaveUp` (no library retries it)."""
    fail(message)
    wait.over_limit = True
    return GaveUp(wait.last_failed or message)


@functools.cache
def _stall_reported() -> type:
    """A response body (the HTTP library's SyncByteStream) whose stall (no byte within the
    timeout) or broken connection is recorded, and whose wait is announced as a request's is: a
    body that sends nothing for :func:`progress_after` prints the "waiting for HOST" line (once)."""
    httpx = _http()

    class StallReported(httpx.SyncByteStream):  # type: ignore[name-defined,misc,unused-ignore]
        def __init__(self, inner: Any, host: str, seconds: float, fail: Callable[[str], None],
                     wait: Wait | None = None, coding: str | None = None) -> None:
            self._inner, self._host, self._seconds, self._fail, self._wait = inner, host, seconds, fail, wait
            self._coding = coding  # the body's content coding, one of DECODED_SIZE when the wait has a limit
            self._after = progress_after(seconds)
            self._guard = threading.Lock()
            self._reading: float | None = None  # since when the next bytes are awaited (None: not reading)
            self._timer: threading.Timer | None = None
            self._done = False

        def _check(self) -> None:
            """The watch over the body, one timer at a time: the line once a read has waited the
            whole delay; re-armed for the rest of it while a read is younger; none while the caller
            is not reading (its own work between reads is no wait for the Hub)."""
            with self._guard:
                self._timer = None
                if self._done or self._reading is None:
                    return
                waited = time.monotonic() - self._reading
                if waited < self._after:
                    self._arm(self._after - waited)
                    return
                self._done = True
            _announce(self._host, self._seconds, self._wait)

        def _arm(self, delay: float) -> None:  # under self._guard
            self._timer = threading.Timer(delay, self._check)
            self._timer.daemon = True
            self._timer.start()

        def _read_from(self, chunks: Iterator[bytes]) -> bytes:
            with self._guard:
                self._reading = time.monotonic()
                if not self._done and self._timer is None:
                    self._arm(self._after)
            try:
                return next(chunks)
            finally:
                self._reading = None

        def _stop(self) -> None:
            with self._guard:
                self._done = True
                if self._timer is not None:
                    self._timer.cancel()

        def __iter__(self) -> Iterator[bytes]:
            chunks = iter(self._inner)
            limit = self._wait.max_bytes if self._wait is not None else None
            # what is written: the bytes sent, or what they decode to (counted before the library decodes them)
            decoded = DecodedSize(self._coding) if limit is not None and self._coding is not None else None
            received = 0
            try:
                while True:
                    try:
                        chunk = self._read_from(chunks)
                    except StopIteration:
                        return
                    if limit is not None:
                        received += len(chunk) if decoded is None else decoded.count(chunk, limit - received)
                    if limit is not None and received > limit:  # no length announced, a false one, or encoded
                        assert self._wait is not None  # a limit comes with its wait
                        sent = f"more than the {limit:,}-byte limit for such files"
                        sent += f" (decoded from {self._coding})" if decoded is not None else ""
                        raise _over_limit(self._wait, self._fail, f"the Hub sent {sent}; the transfer was stopped")
                    yield chunk
            except httpx.TimeoutException:
                self._fail(f"the Hub at {self._host} stopped sending for {self._seconds:g} s (--timeout): the "
                           "transfer stalled")
                raise
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                self._fail(f"the connection to the Hub at {self._host} broke during a transfer: {_line(exc)}")
                raise
            finally:
                self._stop()

        def close(self) -> None:
            self._stop()
            self._inner.close()

    return StallReported


# the headers by which a server asks a client to wait before it retries: huggingface_hub sleeps
# that long (``Retry-After: 100000``: 28 hours, unbounded by any timeout) before the retry this
# module refuses anyway
WAIT_HEADERS = ("retry-after", "ratelimit", "ratelimit-policy")


def _drop_wait_headers(headers: Any) -> str | None:
    """Remove the retry-wait headers of a failed answer (the library then waits its own base second
    before the retry that is refused); return the wait it asked for, for the message."""
    asked = headers.get("retry-after")
    for name in WAIT_HEADERS:
        if name in headers:
            del headers[name]
    if asked is None:
        return None
    text = " ".join(str(asked).split())[:60]
    return f"{text} s" if text.isdigit() else text


def _fail(wait: Wait | None, url: str, message: str) -> None:
    if wait is not None:
        wait.fail(url, message)


def _announce(host: str, seconds: float, wait: Wait | None) -> None:
    with _lock:
        if host in _announced:
            return
        _announced.add(host)
    what = f" for {wait.what}" if wait is not None else ""
    print(f"waiting for {host}{what} (up to {seconds:g} s to connect or between bytes; --timeout)",
          file=sys.stderr, flush=True)


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "TIMEOUT_HELP", "BoundedTransport", "GaveUp", "Wait", "bounded",
           "check_timeout", "install", "set_timeout", "timeout"]
