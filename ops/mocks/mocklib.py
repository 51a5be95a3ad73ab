"""Shared plumbing for the mock APNs and FCM servers (HTTP/2 over TLS with the `h2` package).

What lives here:
  * `H2ServerProtocol`: one asyncio protocol per TLS connection. It speaks HTTP/2 (ALPN `h2` only),
    enforces the advertised SETTINGS_MAX_CONCURRENT_STREAMS itself (extra streams get RST_STREAM
    REFUSED_STREAM, which clients retry), acknowledges every DATA frame for flow control, honours the
    peer's flow-control window when sending, applies injected latency, and can drain with GOAWAY or close
    abruptly (POST /drop, an outage with status=drop).
  * `H1ServerProtocol`: the same over HTTP/1.1 (ALPN `http/1.1`) for a mock whose args set `http1`
    (the Web Push mock's --http1): keep-alive, one request at a time, chunked answers.
  * `Outage`: the provider-wide trouble switch set by POST /outage, checked before the app sees a request.
  * `Stats`, `Recorder`: counters for the admin endpoint and a JSON-lines request log.
  * the admin HTTP/1.1 server (plain text, 127.0.0.1) and the `--processes N` fork/aggregate mode.

Each mock supplies an "app" object with:
    handle(proto, req) -> Response         # called once per complete request
    admin_routes() -> {(METHOD, PATH): fn}  # fn(query: dict) -> (status, json-able object)
    stats() -> dict                         # what GET /stats returns
    is_push(req) -> bool                    # does an outage (POST /outage) apply to this request
    outage_reason(status) -> str            # the reason an outage of that status gives by default
    outage_answer(proto, req, outage) -> Response   # counts and records an outage answer
    outage_drop(proto, req)                 # counts and records a request dropped by an outage
    on_connection_made(proto) / on_connection_lost(proto)   (optional)
"""

import asyncio
import ctypes
import functools
import json
import os
import random
import secrets
import signal
import socket
import ssl
import sys
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes
from h2.settings import SettingCodes

LOOPBACK = "127.0.0.1"


# --------------------------------------------------------------------------------------------------
# HTTP/2 plumbing


# ---- speed-ups for the pure-Python stack (behaviour unchanged)

import hpack.hpack
import hpack.huffman_table as _ht


class _NullLog:
    def debug(self, *a, **k):
        pass

    info = warning = debug


hpack.hpack.log = _NullLog()  # hpack logs at DEBUG for every header: pure overhead here

_HUFF_BYTE = {}       # (state << 8 | byte) -> (next state, flags, emitted bytes) for a whole byte
_HUFF_CACHE = {}      # encoded -> decoded, for values that repeat (authorization, content-length...)


def _huff_step(state, byte):
    out = bytearray()
    flags = 0
    for nibble in (byte >> 4, byte & 0x0F):
        state, flags, sym = _ht.HUFFMAN_TABLE[state * 16 + nibble]
        if flags & _ht.HUFFMAN_FAIL:
            return (0, _ht.HUFFMAN_FAIL, b"")
        if flags & _ht.HUFFMAN_EMIT_SYMBOL:
            out.append(sym)
    return (state, flags, bytes(out))


def _fast_decode_huffman(data):
    if not data:
        return b""
    data = bytes(data)
    hit = _HUFF_CACHE.get(data)
    if hit is not None:
        return hit
    table = _HUFF_BYTE
    state = 0
    flags = 0
    parts = []
    for byte in data:
        key = state << 8 | byte
        entry = table.get(key)
        if entry is None:
            entry = table[key] = _huff_step(state, byte)
        state, flags, out = entry
        if flags & _ht.HUFFMAN_FAIL:
            raise hpack.hpack.HPACKDecodingError("Invalid Huffman string")
        if out:
            parts.append(out)
    if not (flags & _ht.HUFFMAN_COMPLETE):
        raise hpack.hpack.HPACKDecodingError("Incomplete Huffman string")
    result = b"".join(parts)
    if len(_HUFF_CACHE) > 20000:
        _HUFF_CACHE.clear()
    _HUFF_CACHE[data] = result
    return result


hpack.hpack.decode_huffman = _fast_decode_huffman


class _ServerConnection(h2.connection.H2Connection):
    """h2 counts open streams by scanning every stream on each new HEADERS frame (O(streams in
    flight) per request). The mock enforces the stream limit itself, so report 0 and drop closed
    streams from h2's table only every 256 new streams."""

    _cull_counter = 0

    @property
    def open_inbound_streams(self):
        self._cull_counter += 1
        if self._cull_counter >= 256:
            self._cull_counter = 0
            self._open_streams(1)
        return 0


_CONNECTION_HEADERS = {b"connection", b"proxy-connection", b"keep-alive", b"transfer-encoding", b"upgrade"}
_REQUEST_PSEUDO = {b":method", b":scheme", b":path", b":authority"}


def malformed_request(headers):
    """RFC 9113 8.2/8.3 checks on a request header block (h2's own validation is much slower).
    Returns a description, or None when the block is well formed."""
    regular = False
    seen = set()
    for name, value in headers:
        if name[:1] == b":":
            if regular:
                return "pseudo-header after a regular header"
            if name not in _REQUEST_PSEUDO:
                return f"unknown pseudo-header {name!r}"
            if name in seen:
                return f"duplicate pseudo-header {name!r}"
            seen.add(name)
        else:
            regular = True
            if name.lower() != name:
                return f"upper-case header name {name!r}"
            if name in _CONNECTION_HEADERS:
                return f"connection-specific header {name!r}"
            if name == b"te" and value != b"trailers":
                return "te other than trailers"
        if b"\r" in value or b"\n" in value or b"\0" in value:
            return f"illegal character in {name!r}"
    if b":method" not in seen or b":path" not in seen or b":scheme" not in seen:
        return "missing :method, :scheme or :path"
    return None


class _AdvertiseOnlySettings(h2.settings.Settings):
    """Local settings whose MAX_CONCURRENT_STREAMS is advertised to the peer but not enforced by h2.

    h2 answers a stream over the limit with a connection error (TooManyStreamsError). Servers such as
    nghttpd refuse just that stream instead, so the protocol below enforces the limit itself and
    refuses the extra stream with REFUSED_STREAM. h2 still decodes its headers, so HPACK stays in step.
    """

    @property
    def max_concurrent_streams(self):
        return 2**31 - 1


class Request:
    __slots__ = ("stream_id", "headers", "duplicates", "body", "received_at")

    def __init__(self, stream_id, headers, duplicates):
        self.stream_id = stream_id
        self.headers = headers          # {lower-case name: str value}, pseudo-headers included
        self.duplicates = duplicates    # set of names that appeared more than once
        self.body = bytearray()
        self.received_at = time.monotonic()

    @property
    def method(self):
        return self.headers.get(":method", "")

    @property
    def path(self):
        return self.headers.get(":path", "")


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers=(), body=b""):
        self.status = status
        self.headers = list(headers)    # [(name, value)] as str
        self.body = body


def json_response(status, obj, headers=()):
    body = json.dumps(obj, separators=(",", ":")).encode()
    return Response(status, [("content-type", "application/json; charset=UTF-8"), *headers], body)


def dispatch(proto, req, respond, respond_later):
    """Answers a complete request on connection `proto`, with `respond(resp)` at once or
    `respond_later(resp)` after the injected latency."""
    resp = answer(proto, req)
    if resp is None:
        return
    delay = proto.server.delay()
    if delay > 0:
        asyncio.get_running_loop().call_later(delay, respond_later, resp)
    else:
        respond(resp)


def answer(proto, req):
    """The answer to a complete request on connection `proto`: the outage's while one is in force for
    it, else the app's; None when an outage drops the connection (the request stays unanswered)."""
    outage = proto.server.current_outage()
    try:
        if outage is not None and proto.app.is_push(req):
            proto.server.outage_answers += 1
            if outage.drop:
                proto.app.outage_drop(proto, req)
                proto.drop()
                return None
            return proto.app.outage_answer(proto, req, outage)
        return proto.app.handle(proto, req)
    except Exception as e:  # a bug in the mock must not kill the connection silently
        proto.server.log(f"conn#{proto.conn_id}: handler error: {e!r}")
        import traceback
        traceback.print_exc(file=sys.stderr)
        return json_response(500, {"reason": "InternalServerError"})


class H2ServerProtocol(asyncio.Protocol):
    """One HTTP/2 connection. Connection-level state for the app lives in `self.state`."""

    next_id = 0

    def __init__(self, server):
        self.server = server            # MockServer
        self.app = server.app
        self.transport = None
        self.conn = None
        H2ServerProtocol.next_id += 1
        self.conn_id = H2ServerProtocol.next_id
        self.state = {}
        self.requests = {}              # stream id -> Request still being received
        self.active = 0                 # streams open (request seen, response not finished)
        self.active_ids = set()
        self.pending_out = {}           # stream id -> [bytes remaining, end_stream]
        self.max_streams = getattr(self.app, "initial_max_streams", None) or server.max_streams
        self.flush_scheduled = False
        self.draining = False           # GOAWAY requested: answer what we have, then close
        self.last_processed = 0
        self.closed = False

    # ---- connection lifecycle
    def connection_made(self, transport):
        self.transport = transport
        sslobj = transport.get_extra_info("ssl_object")
        alpn = sslobj.selected_alpn_protocol() if sslobj is not None else None
        if alpn != "h2":
            self.server.log(f"conn#{self.conn_id}: ALPN {alpn!r} is not h2, closing")
            transport.close()
            self.closed = True
            return
        config = h2.config.H2Configuration(
            client_side=False,
            header_encoding=None,
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            validate_inbound_headers=False,
            normalize_inbound_headers=False,
        )
        self.conn = _ServerConnection(config=config)
        self.conn.local_settings = _AdvertiseOnlySettings(
            client=False,
            initial_values={
                SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams,
                SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
            },
        )
        # Response header values are mostly unique (apns-id, message names): plain literals are
        # cheaper to encode than Huffman and just as valid HPACK.
        self.conn.encoder.encode = functools.partial(type(self.conn.encoder).encode, self.conn.encoder, huffman=False)
        self.conn.initiate_connection()
        # A large connection-level receive window; streams keep the default 64 KiB.
        self.conn.increment_flow_control_window(16 * 1024 * 1024 - 65535)
        self.server.connection_opened(self)
        self.transport.write(self.conn.data_to_send())
        if self.server.verbose:
            peer = transport.get_extra_info("peername")
            self.server.log(f"conn#{self.conn_id}: open from {peer}")

    def connection_lost(self, exc):
        self.closed = True
        if self in self.server.connections:  # not when ALPN failed or drop() already counted it
            self.server.connection_closed(self)
            if self.server.verbose:
                self.server.log(f"conn#{self.conn_id}: closed ({exc or 'clean'})")

    # ---- inbound
    def data_received(self, data):
        if self.conn is None or self.closed:
            return
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self.server.log(f"conn#{self.conn_id}: HTTP/2 protocol error: {e}")
            self._flush_now()
            self.transport.close()
            return
        for ev in events:
            t = type(ev)
            if t is h2.events.RequestReceived:
                self._request_received(ev)
            elif t is h2.events.DataReceived:
                if ev.flow_controlled_length:
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                req = self.requests.get(ev.stream_id)
                if req is not None:
                    req.body += ev.data
            elif t is h2.events.StreamEnded:
                req = self.requests.pop(ev.stream_id, None)
                if req is not None:
                    self._dispatch(req)
                    if self.closed:
                        return  # dropped by an outage: nothing more is read or written
            elif t is h2.events.StreamReset:
                self._forget(ev.stream_id)
            elif t is h2.events.WindowUpdated:
                if self.pending_out:
                    self._send_pending()
            elif t is h2.events.ConnectionTerminated:
                self._flush_now()
                self.transport.close()
                return
        self._flush_now()

    def _request_received(self, ev):
        sid = ev.stream_id
        if self.draining and sid > self.last_processed:
            return  # after GOAWAY's last-stream-id: never processed, the client retries it
        if self.active >= self.max_streams:
            self.conn.reset_stream(sid, ErrorCodes.REFUSED_STREAM)
            self.server.refused += 1
            return
        bad = malformed_request(ev.headers)
        if bad is not None:
            if self.server.verbose:
                self.server.log(f"conn#{self.conn_id}: stream {sid} malformed: {bad}")
            self.conn.reset_stream(sid, ErrorCodes.PROTOCOL_ERROR)
            self.server.malformed += 1
            return
        headers = {}
        dups = None
        for name, value in ev.headers:
            n = name.decode("latin-1").lower()
            v = value.decode("utf-8", "replace")
            if n in headers:
                if dups is None:
                    dups = set()
                dups.add(n)
                continue
            headers[n] = v
        self.active += 1
        self.active_ids.add(sid)
        if self.active > self.server.peak_streams:
            self.server.peak_streams = self.active
        if sid > self.last_processed:
            self.last_processed = sid
        req = Request(sid, headers, dups or ())
        self.requests[sid] = req  # answered on StreamEnded (which follows at once if HEADERS ended it)

    def _dispatch(self, req):
        sid = req.stream_id
        dispatch(self, req, lambda resp: self._respond(sid, resp), lambda resp: self._respond_later(sid, resp))

    def _respond_later(self, sid, resp):
        if self.closed:
            return
        self._respond(sid, resp)
        self._schedule_flush()

    # ---- outbound
    def _respond(self, sid, resp):
        if sid not in self.active_ids:
            return  # reset by the client meanwhile
        hdrs = [(":status", str(resp.status))]
        hdrs.extend(resp.headers)
        body = resp.body
        try:
            if body:
                hdrs.append(("content-length", str(len(body))))
                self.conn.send_headers(sid, hdrs)
                self.pending_out[sid] = [bytes(body), True]
                self._send_pending(only=sid)
            else:
                self.conn.send_headers(sid, hdrs, end_stream=True)
                self._forget(sid)
        except h2.exceptions.H2Error as e:
            if self.server.verbose:
                self.server.log(f"conn#{self.conn_id}: cannot answer stream {sid}: {e}")
            self._forget(sid)

    def _send_pending(self, only=None):
        ids = [only] if only is not None else list(self.pending_out)
        for sid in ids:
            item = self.pending_out.get(sid)
            if item is None:
                continue
            data = item[0]
            try:
                while data:
                    window = self.conn.local_flow_control_window(sid)
                    size = min(window, self.conn.max_outbound_frame_size, len(data))
                    if size <= 0:
                        break
                    last = size == len(data)
                    self.conn.send_data(sid, data[:size], end_stream=last)
                    data = data[size:]
                item[0] = data
                if not data:
                    self._forget(sid)
            except h2.exceptions.H2Error:
                self._forget(sid)

    def _forget(self, sid):
        self.requests.pop(sid, None)
        self.pending_out.pop(sid, None)
        if sid in self.active_ids:
            self.active_ids.discard(sid)
            self.active -= 1
            if self.draining and self.active == 0:
                asyncio.get_running_loop().call_soon(self._finish_goaway)

    def _schedule_flush(self):
        if not self.flush_scheduled:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_now)

    def _flush_now(self):
        self.flush_scheduled = False
        if self.conn is None or self.closed:
            return
        out = self.conn.data_to_send()
        if out:
            self.transport.write(out)

    # ---- control from the app / admin
    def drop(self):
        """Abrupt close: no GOAWAY, no RST_STREAM, nothing more written, not even what is buffered.
        Streams not yet answered stay unanswered. Returns False when the connection was already closed."""
        if self.closed or self.transport is None:
            return False
        self.closed = True
        self.server.connection_closed(self)
        self.transport.abort()
        if self.server.verbose:
            self.server.log(f"conn#{self.conn_id}: dropped")
        return True

    def set_max_streams(self, n):
        """Advertise a new SETTINGS_MAX_CONCURRENT_STREAMS (enforced at once)."""
        if self.conn is None or self.closed or n == self.max_streams:
            return
        self.max_streams = n
        try:
            self.conn.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: n})
        except h2.exceptions.H2Error:
            return
        self._schedule_flush()

    def goaway(self, debug=b""):
        """Graceful shutdown: answer the streams already taken, ignore newer ones, then GOAWAY."""
        if self.conn is None or self.closed or self.draining:
            return
        self.draining = True
        self.goaway_debug = debug
        if self.active == 0:
            self._finish_goaway()

    def _finish_goaway(self):
        if self.closed or self.conn is None:
            return
        try:
            self.conn.close_connection(
                error_code=ErrorCodes.NO_ERROR,
                additional_data=self.goaway_debug or None,
                last_stream_id=self.last_processed,
            )
        except h2.exceptions.H2Error:
            pass
        self._flush_now()
        self.transport.close()


class H1ServerProtocol(asyncio.Protocol):
    """One HTTP/1.1 connection over TLS (ALPN `http/1.1` or none), for a mock started with --http1: kept
    alive, requests read in order and answered one at a time (`Content-Length` request bodies only).
    A response with a body goes out chunked, one without carries `content-length: 0`; after
    --http1-max-requests answers the connection says `connection: close` and closes. The app sees the
    same `Request` as over HTTP/2 (`:method`, `:path` and `:authority` among its headers)."""

    def __init__(self, server):
        self.server = server
        self.app = server.app
        self.transport = None
        H2ServerProtocol.next_id += 1
        self.conn_id = H2ServerProtocol.next_id
        self.state = {}
        self.buffer = bytearray()
        self.active = 0                 # 1 while a request waits for its answer
        self.answered = 0
        self.draining = False           # POST /goaway: close after the request in hand
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport
        sslobj = transport.get_extra_info("ssl_object")
        alpn = sslobj.selected_alpn_protocol() if sslobj is not None else None
        if alpn not in (None, "http/1.1"):
            self.server.log(f"conn#{self.conn_id}: ALPN {alpn!r} is not http/1.1, closing")
            transport.close()
            self.closed = True
            return
        self.server.connection_opened(self)
        if self.server.verbose:
            self.server.log(f"conn#{self.conn_id}: open from {transport.get_extra_info('peername')} (HTTP/1.1)")

    def connection_lost(self, exc):
        self.closed = True
        if self in self.server.connections:
            self.server.connection_closed(self)
            if self.server.verbose:
                self.server.log(f"conn#{self.conn_id}: closed ({exc or 'clean'})")

    def data_received(self, data):
        if self.closed:
            return
        self.buffer += data
        self._next_request()

    def _next_request(self):
        """Takes the next complete request off the buffer while none is being answered."""
        if self.active or self.closed:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > 65536:
                self._reply_and_close(431)
            return
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return self._reply_and_close(400)
        headers = {":method": parts[0], ":path": parts[1]}
        dups = set()
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                return self._reply_and_close(400)
            name = name.strip().lower()
            if name in headers:
                dups.add(name)
                continue
            headers[name] = value.strip()
        if "transfer-encoding" in headers:
            return self._reply_and_close(411)
        length = headers.get("content-length", "0")
        if not length.isdigit():
            return self._reply_and_close(400)
        total = end + 4 + int(length)
        if len(self.buffer) < total:
            return
        headers[":authority"] = headers.pop("host", "")
        req = Request(self.answered + 1, headers, dups)
        req.body = bytearray(self.buffer[end + 4:total])
        del self.buffer[:total]
        self.active = 1
        if self.server.peak_streams < 1:
            self.server.peak_streams = 1
        self._dispatch(req)

    def _dispatch(self, req):
        dispatch(self, req, self._respond, self._respond)

    def _respond(self, resp):
        if self.closed:
            return
        self.answered += 1
        limit = self.server.args.http1_max_requests
        closing = self.draining or (limit > 0 and self.answered >= limit)
        head = [f"HTTP/1.1 {resp.status} Mock"]
        head.extend(f"{name}: {value}" for name, value in resp.headers)
        body = bytes(resp.body)
        if body:
            head.append("transfer-encoding: chunked")
            half = len(body) // 2
            framed = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:]) if part) + b"0\r\n\r\n"
        else:
            head.append("content-length: 0")
            framed = b""
        if closing:
            head.append("connection: close")
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + framed)
        self.active = 0
        if closing:
            return self._close()
        self._next_request()

    def _reply_and_close(self, status):
        self.server.malformed += 1
        self.transport.write(f"HTTP/1.1 {status} Mock\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode())
        self._close()

    # Abrupt close, nothing more written; the request in hand stays unanswered.
    drop = H2ServerProtocol.drop

    def _close(self):
        """Closes after what is written (once)."""
        self.closed = True
        self.server.connection_closed(self)
        self.transport.close()

    def set_max_streams(self, n):
        """HTTP/1.1 carries one request at a time: nothing to announce."""

    def goaway(self, debug=b""):
        """Closes once the request in hand is answered (at once when there is none)."""
        if self.closed:
            return
        self.draining = True
        if not self.active:
            self._close()


# --------------------------------------------------------------------------------------------------
# Stats and the request log


class Recorder:
    """Appends one JSON line per call. The line is written before the response is sent, so a client
    that has its answer can read its line. O_APPEND keeps lines whole across several processes."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if path else None

    def write(self, obj):
        if self.fd is not None:
            os.write(self.fd, (json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n").encode())


def bump(d, key, n=1):
    d[key] = d.get(key, 0) + n


class BearerApp:
    """What the mocks of OAuth 2.0 protected APIs (FCM, Huawei Push Kit) share: the counters of pushes
    and token requests that /stats shows and /reset clears, and the access tokens issued."""

    def __init__(self):
        self.access_tokens = {}   # token -> expiry (unix s)
        self.reset()

    def reset(self):
        self.requests = 0
        self.accepted = 0
        self.rejected = {}
        self.token_requests = 0
        self.tokens_issued = 0
        self.token_rejected = {}
        self.token_attempts = {}

    def stats(self):
        return {
            "requests": self.requests,
            "accepted": self.accepted,
            "rejected": dict(self.rejected),
            "token_requests": self.token_requests,
            "tokens_issued": self.tokens_issued,
            "token_rejected": dict(self.token_rejected),
            "tokens_valid": sum(1 for exp in self.access_tokens.values() if exp > time.time()),
        }

    def admin_routes(self):
        def reset(q):
            self.reset()
            return 200, {"reset": True}

        return {("GET", "/stats"): lambda q: (200, self.stats()), ("POST", "/reset"): reset}

    def issue_token(self, prefix, ttl):
        """A new access token valid for `ttl` seconds; expired ones are forgotten past 100,000."""
        token = prefix + secrets.token_urlsafe(32)
        now = time.time()
        self.access_tokens[token] = now + ttl
        if len(self.access_tokens) > 100000:
            self.access_tokens = {t: e for t, e in self.access_tokens.items() if e > now}
        return token


class Outage:
    """A provider-wide outage set by POST /outage. `status` is an HTTP status or "drop"; `reason` is None
    for the mock's default; `until` is a unix time or None (until cleared)."""

    __slots__ = ("status", "reason", "retry_after", "until")

    def __init__(self, status, reason=None, retry_after=None, until=None):
        self.status = status
        self.reason = reason
        self.retry_after = retry_after
        self.until = until

    @property
    def drop(self):
        return self.status == "drop"

    def headers(self):
        return [("retry-after", str(self.retry_after))] if self.retry_after is not None else []


# --------------------------------------------------------------------------------------------------
# The server


class MockServer:
    def __init__(self, args, app, name):
        self.args = args
        self.app = app
        self.name = name
        self.max_streams = args.max_streams
        self.verbose = args.verbose
        self.latency = max(0.0, args.latency_ms / 1000.0)
        self.jitter = max(0.0, args.jitter_ms / 1000.0)
        self.connections = set()
        self.outage = None          # an Outage while POST /outage is in force; /reset keeps it
        self.reset_counters()

    def reset_counters(self):
        self.outage_answers = 0
        self.connections_total = 0
        self.refused = 0
        self.malformed = 0
        self.peak_streams = 0
        self.peak_connections = len(getattr(self, "connections", ()))

    def current_outage(self):
        outage = self.outage
        if outage is not None and outage.until is not None and time.time() >= outage.until:
            self.outage = outage = None
        return outage

    def outage_view(self):
        outage = self.current_outage()
        if outage is None:
            return None
        reason = None if outage.drop else (outage.reason or self.app.outage_reason(outage.status))
        return {"status": outage.status, "until": outage.until, "retry_after": outage.retry_after,
                "reason": reason}

    def delay(self):
        if self.jitter:
            return self.latency + random.random() * self.jitter
        return self.latency

    def log(self, msg):
        print(f"{self.name}[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)

    def connection_opened(self, proto):
        self.connections.add(proto)
        self.connections_total += 1
        if len(self.connections) > self.peak_connections:
            self.peak_connections = len(self.connections)
        hook = getattr(self.app, "on_connection_made", None)
        if hook:
            hook(proto)

    def connection_closed(self, proto):
        self.connections.discard(proto)
        hook = getattr(self.app, "on_connection_lost", None)
        if hook:
            hook(proto)

    def transport_stats(self):
        return {
            "connections": self.connections_total,
            "connections_open": len(self.connections),
            "peak_connections": self.peak_connections,
            "peak_streams_per_connection": self.peak_streams,
            "refused_streams": self.refused,
            "malformed_streams": self.malformed,
            "outage": self.outage_view(),
            "outage_answers": self.outage_answers,
        }

    # Admin routes common to both mocks.
    def common_routes(self):
        def goaway(q):
            n = 0
            for proto in list(self.connections):
                proto.goaway(self.app.goaway_debug() if hasattr(self.app, "goaway_debug") else b"")
                n += 1
            return 200, {"goaway": n}

        def max_streams(q):
            try:
                n = int(q.get("n", ""))
                if n < 0:
                    raise ValueError
            except ValueError:
                return 400, {"error": "give ?n=<non-negative integer>"}
            self.max_streams = n
            for proto in list(self.connections):
                proto.set_max_streams(n)
            return 200, {"max_streams": n, "connections": len(self.connections)}

        def latency(q):
            try:
                if "ms" in q:
                    self.latency = max(0.0, float(q["ms"]) / 1000.0)
                if "jitter_ms" in q:
                    self.jitter = max(0.0, float(q["jitter_ms"]) / 1000.0)
            except ValueError:
                return 400, {"error": "give ?ms=<number>&jitter_ms=<number>"}
            return 200, {"latency_ms": self.latency * 1000.0, "jitter_ms": self.jitter * 1000.0}

        def outage(q):
            usage = ("give ?status=<400..599, drop or 0>[&seconds=<positive number>]"
                     "[&retry_after=<non-negative integer>][&reason=<text>]")
            raw = q.get("status", "").strip().lower()
            try:
                status = raw if raw == "drop" else int(raw)
                if status != "drop" and status != 0 and not 400 <= status <= 599:
                    raise ValueError
                seconds = float(q["seconds"]) if q.get("seconds", "") != "" else None
                if seconds is not None and not 0 < seconds < 1e9:
                    raise ValueError
                retry_after = int(q["retry_after"]) if q.get("retry_after", "") != "" else None
                if retry_after is not None and retry_after < 0:
                    raise ValueError
            except ValueError:
                return 400, {"error": usage}
            if status == 0:
                self.outage = None
            else:
                until = round(time.time() + seconds, 6) if seconds is not None else None
                self.outage = Outage(status, q.get("reason") or None, retry_after, until)
                if self.verbose:
                    self.log(f"outage: {self.outage_view()}")
            return 200, {"outage": self.outage_view()}

        def clear_outage(q):
            self.outage = None
            return 200, {"outage": None}

        def drop(q):
            # Requests the dropped connections carried without an answer yet.
            unanswered = sum(proto.active for proto in list(self.connections) if not proto.closed)
            n = sum(1 for proto in list(self.connections) if proto.drop())
            return 200, {"closed": n, "unanswered": unanswered}

        return {
            ("POST", "/outage"): outage,
            ("POST", "/outage/clear"): clear_outage,
            ("POST", "/drop"): drop,
            ("POST", "/goaway"): goaway,
            ("POST", "/max-streams"): max_streams,
            ("POST", "/latency"): latency,
            ("GET", "/healthz"): lambda q: (200, {"ok": True}),
        }

    def admin_routes(self):
        routes = self.common_routes()
        routes.update(self.app.admin_routes())
        return routes


def make_ssl_context(cert, key, http1=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"] if http1 else ["h2"])
    ctx.options |= ssl.OP_NO_COMPRESSION
    return ctx


# --------------------------------------------------------------------------------------------------
# Admin HTTP/1.1 server (plain text)


async def _read_http_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(length) if length else b""
    return method.upper(), target, headers, body


def _http_reply(writer, status, obj):
    body = (json.dumps(obj, indent=None, separators=(", ", ": "), sort_keys=True) + "\n").encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
              500: "Internal Server Error"}.get(status, "OK")
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    )


async def start_admin(port, routes_fn):
    """routes_fn() -> {(METHOD, PATH): fn(query) -> (status, obj) or awaitable of it}."""

    async def handle(reader, writer):
        try:
            method, target, _headers, body = await _read_http_request(reader)
            url = urllib.parse.urlsplit(target)
            query = dict(urllib.parse.parse_qsl(url.query))
            if body and not query:
                try:
                    query = dict(urllib.parse.parse_qsl(body.decode()))
                except Exception:
                    pass
            routes = routes_fn()
            fn = routes.get((method, url.path))
            if fn is None:
                if any(p == url.path for (_m, p) in routes):
                    status, obj = 405, {"error": f"{method} not allowed on {url.path}"}
                else:
                    status, obj = 404, {"error": "unknown path", "paths": sorted(f"{m} {p}" for m, p in routes)}
            else:
                result = fn(query)
                if asyncio.iscoroutine(result):
                    result = await result
                status, obj = result
            _http_reply(writer, status, obj)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, LOOPBACK, port, reuse_address=True)


async def _admin_call(port, method, path):
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: {LOOPBACK}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body or b"null")


def merge_stats(parts):
    """Sum numbers and {key: number} maps; peaks take the maximum."""
    out = {}
    for part in parts:
        for k, v in part.items():
            if k == "outage":
                out.setdefault(k, v)  # the same switch in every worker: keep the first one's view
            elif isinstance(v, bool) or not isinstance(v, (int, float, dict)):
                out.setdefault(k, v)
            elif isinstance(v, dict):
                d = out.setdefault(k, {})
                for kk, vv in v.items():
                    if isinstance(vv, (int, float)):
                        d[kk] = d.get(kk, 0) + vv
            elif k.startswith("peak_") or k.startswith("max_"):
                out[k] = max(out.get(k, 0), v)
            else:
                out[k] = out.get(k, 0) + v
    return out


# --------------------------------------------------------------------------------------------------
# Command line and process model


def add_common_args(p, default_streams):
    p.add_argument("--port", type=int, default=0, help="TLS port on 127.0.0.1 (0 = pick one; printed as 'LISTENING <port>')")
    p.add_argument("--admin-port", type=int, default=0, help="plain HTTP/1.1 admin port (0 = pick one; printed as 'ADMIN <port>')")
    p.add_argument("--cert", required=True, help="server certificate chain (PEM)")
    p.add_argument("--key", required=True, help="server private key (PEM)")
    p.add_argument("--max-streams", type=int, default=default_streams,
                   help=f"SETTINGS_MAX_CONCURRENT_STREAMS per connection (default {default_streams})")
    p.add_argument("--latency-ms", type=float, default=0.0, help="delay before each response (default 0)")
    p.add_argument("--jitter-ms", type=float, default=0.0, help="extra uniform random delay 0..J ms (default 0)")
    p.add_argument("--record", metavar="FILE", help="append one JSON line per request to FILE")
    p.add_argument("--processes", type=int, default=1,
                   help="fork N worker processes sharing one listening socket; the admin port aggregates them")
    p.add_argument("-v", "--verbose", action="store_true", help="log connections and every request to stderr")


def _die_with_parent():
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _install_quiet_exception_handler(loop, verbose):
    def handler(loop, context):
        exc = context.get("exception")
        if isinstance(exc, (ConnectionError, ssl.SSLError, TimeoutError)) and not verbose:
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


async def _serve(args, make_app, name, announce, ready_fd=None, sock=None):
    loop = asyncio.get_running_loop()
    _install_quiet_exception_handler(loop, args.verbose)
    app = make_app(args)
    server = MockServer(args, app, name)
    app.server = server
    http1 = getattr(args, "http1", False)
    ctx = make_ssl_context(args.cert, args.key, http1)
    protocol = H1ServerProtocol if http1 else H2ServerProtocol
    if sock is not None:
        # A listening socket shared with sibling workers: accept one connection per wake-up so that
        # whichever worker is idle takes the next one (backlog here is asyncio's accepts per wake-up).
        srv = await loop.create_server(lambda: protocol(server), sock=sock, ssl=ctx, backlog=1)
    else:
        srv = await loop.create_server(lambda: protocol(server), LOOPBACK, args.port, ssl=ctx,
                                       reuse_port=True, reuse_address=True, backlog=4096)
    port = srv.sockets[0].getsockname()[1]
    if hasattr(app, "on_listening"):
        app.on_listening(port)

    def routes():
        r = server.admin_routes()
        base_stats = r.get(("GET", "/stats"))
        if base_stats is not None:
            def stats(q):
                st, obj = base_stats(q)
                obj.update(server.transport_stats())
                obj["pid"] = os.getpid()
                return st, obj
            r[("GET", "/stats")] = stats
        base_reset = r.get(("POST", "/reset"))
        if base_reset is not None:
            def reset(q):
                server.reset_counters()
                return base_reset(q)
            r[("POST", "/reset")] = reset
        return r

    admin = await start_admin(args.admin_port if announce else 0, routes)
    admin_port = admin.sockets[0].getsockname()[1]
    if announce:
        print(f"LISTENING {port}", flush=True)
        print(f"ADMIN {admin_port}", flush=True)
        server.log(f"listening on https://{LOOPBACK}:{port} ({'http/1.1' if http1 else 'h2'}), admin http://{LOOPBACK}:{admin_port}")
    if ready_fd is not None:
        os.write(ready_fd, f"{admin_port}\n".encode())
        os.close(ready_fd)

    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    await stop
    srv.close()
    admin.close()
    for proto in list(server.connections):
        if proto.transport is not None:
            proto.transport.abort()


def run(args, make_app, name):
    if args.processes <= 1:
        asyncio.run(_serve(args, make_app, name, announce=True))
        return
    # One listening socket, inherited by every worker: they share its accept queue, and an idle worker
    # takes the next connection (SO_REUSEPORT would hash connections to workers regardless of load). The
    # socket still sets SO_REUSEPORT, so other mock processes can bind the same port too.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind((LOOPBACK, args.port))
    listener.listen(4096)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    args.port = port
    children = []
    child_admin = []
    for i in range(args.processes):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _die_with_parent()
            if os.getppid() == 1:
                os._exit(0)
            try:
                asyncio.run(_serve(args, make_app, f"{name}.{i}", announce=False, ready_fd=w, sock=listener))
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            line = f.readline().strip()
        if not line:
            for c in children:
                os.kill(c, signal.SIGTERM)
            sys.exit(f"{name}: worker {i} failed to start")
        children.append(pid)
        child_admin.append(int(line))

    listener.close()  # the workers hold it

    async def parent():
        loop = asyncio.get_running_loop()

        async def fan(method, path):
            return await asyncio.gather(*[_admin_call(p, method, path) for p in child_admin])

        def routes():
            # Ask the first child which routes exist; forward every call to all children.
            return _parent_routes

        async def stats(q):
            parts = await fan("GET", "/stats")
            objs = [o for _s, o in parts]
            merged = merge_stats(objs)
            merged["processes"] = len(objs)
            merged["workers"] = objs
            merged.pop("pid", None)
            return 200, merged

        def forward(method, path):
            async def fn(q):
                qs = ("?" + urllib.parse.urlencode(q)) if q else ""
                parts = await fan(method, path + qs)
                reply = {"workers": [o for _s, o in parts]}
                if all(isinstance(o, dict) and "closed" in o for _s, o in parts):
                    reply["closed"] = sum(o["closed"] for _s, o in parts)  # POST /drop
                    reply["unanswered"] = sum(o.get("unanswered", 0) for _s, o in parts)
                if isinstance(parts[0][1], dict) and "outage" in parts[0][1]:
                    reply["outage"] = parts[0][1]["outage"]  # POST /outage
                return max(s for s, _o in parts), reply
            return fn

        st, listing = await _admin_call(child_admin[0], "GET", "/no-such-path")
        _parent_routes = {}
        for entry in listing.get("paths", []):
            m, pth = entry.split(" ", 1)
            _parent_routes[(m, pth)] = forward(m, pth)
        _parent_routes[("GET", "/stats")] = stats
        admin = await start_admin(args.admin_port, routes)
        admin_port = admin.sockets[0].getsockname()[1]
        print(f"LISTENING {port}", flush=True)
        print(f"ADMIN {admin_port}", flush=True)
        print(f"{name}[{os.getpid()}]: {len(children)} workers on https://{LOOPBACK}:{port} (h2), "
              f"admin http://{LOOPBACK}:{admin_port} (aggregated)", file=sys.stderr, flush=True)
        stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        loop.add_signal_handler(signal.SIGCHLD, lambda: _reap(stop))
        await stop
        admin.close()

    def _reap(stop):
        try:
            while True:
                pid, _status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid in children:
                    children.remove(pid)
                    print(f"{name}: worker {pid} exited", file=sys.stderr, flush=True)
        except ChildProcessError:
            pass
        if not children and not stop.done():
            stop.set_result(None)

    try:
        asyncio.run(parent())
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def b64url_decode(s):
    import base64
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
