#!/usr/bin/env python3
"""Mock Web Push service (RFC 8030) over HTTP/2 + TLS: checks every request as a push service does,
verifies its VAPID token (RFC 8292) with PyJWT and decrypts its payload (RFC 8291, aes128gcm) with
http_ece, a third-party implementation, using the subscribed browser's private key. Scripted outcomes
by subscription id prefix. See ops/mocks/README.md for every flag.

Subscriptions are derived, not stored: the browser key pair and auth secret of subscription id X come
from SHA-256 over --seed and X, so every process of --processes N decrypts every message, and
`GET /subscription?id=X` on the admin port hands out what a browser's PushSubscription.toJSON() gives.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Where ops/install-deps puts http_ece when this python3 can only take it outside its own packages.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build", "python"))

import http_ece  # noqa: E402
import jwt  # noqa: E402  (PyJWT)
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

import mocklib  # noqa: E402
from mocklib import Response, bump, json_response  # noqa: E402

PATH_PREFIX = "/push/"
ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
TOPIC_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
URGENCIES = ("very-low", "low", "normal", "high")
# The P-256 group order: derived scalars fall in 1..ORDER-1.
ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
# Subscription id prefixes with a scripted outcome.
PREFIXES = ("gone", "notfound", "busy", "down", "toolarge")
MAX_BODY = 4096
MAX_VAPID_SECONDS = 24 * 3600


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Reject(Exception):
    def __init__(self, status, reason, headers=()):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = list(headers)


class WebPushApp:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed.encode()
        self.server_key = b64url_decode(args.application_server_key) if args.application_server_key else None
        self.audiences = list(args.audience)
        self.base_url = None
        self.recorder = mocklib.Recorder(args.record)
        self.reset()

    def on_listening(self, port):
        self.base_url = f"https://127.0.0.1:{port}"
        if not self.args.audience:
            self.audiences = [f"https://127.0.0.1:{port}", f"https://localhost:{port}"]

    # ------------------------------------------------------------------ subscriptions
    def browser(self, sid):
        """The browser key pair and auth secret of subscription `sid`."""
        digest = hashlib.sha256(b"herald-webpush-p256|" + self.seed + b"|" + sid.encode()).digest()
        scalar = int.from_bytes(digest, "big") % (ORDER - 1) + 1
        auth = hashlib.sha256(b"herald-webpush-auth|" + self.seed + b"|" + sid.encode()).digest()[:16]
        return ec.derive_private_key(scalar, ec.SECP256R1()), auth

    def subscription(self, sid):
        key, auth = self.browser(sid)
        p256dh = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return {"endpoint": f"{self.base_url}{PATH_PREFIX}{sid}", "keys": {"p256dh": b64url(p256dh), "auth": b64url(auth)}}

    # ------------------------------------------------------------------ state
    def reset(self):
        self.requests = 0
        self.accepted = 0
        self.rejected = {}
        self.attempts = {}

    def goaway_debug(self):
        return b""

    def stats(self):
        return {"requests": self.requests, "accepted": self.accepted, "rejected": dict(self.rejected)}

    def admin_routes(self):
        def reset(q):
            self.reset()
            return 200, {"reset": True}

        def subscription(q):
            sid = q.get("id", "")
            if not ID_RE.match(sid):
                return 400, {"error": "give ?id=<1..128 characters of A-Z a-z 0-9 _ ->"}
            return 200, self.subscription(sid)

        return {
            ("GET", "/stats"): lambda q: (200, self.stats()),
            ("POST", "/reset"): reset,
            ("GET", "/subscription"): subscription,
        }

    # ------------------------------------------------------------------ outages (mocklib)
    def is_push(self, req):
        return req.path.startswith(PATH_PREFIX)

    @staticmethod
    def outage_reason(status):
        return {410: "Gone", 429: "TooManyRequests", 503: "ServiceUnavailable"}.get(status) or f"HTTP{status}"

    def outage_answer(self, proto, req, outage):
        self.requests += 1
        reason = outage.reason or self.outage_reason(outage.status)
        bump(self.rejected, reason)
        self.record(proto, req, {"status": outage.status, "reason": reason, "outage": True})
        return json_response(outage.status, {"reason": reason}, outage.headers())

    def outage_drop(self, proto, req):
        self.requests += 1
        self.record(proto, req, {"status": 0, "reason": "dropped", "outage": True})

    # ------------------------------------------------------------------ requests
    def handle(self, proto, req):
        self.requests += 1
        line = {}
        try:
            self.check(req, line)
        except Reject as r:
            bump(self.rejected, r.reason)
            line.update(status=r.status, reason=r.reason)
            self.record(proto, req, line)
            return json_response(r.status, {"reason": r.reason}, r.headers)
        self.accepted += 1
        line.update(status=201, reason=None)
        self.record(proto, req, line)
        return Response(201, [("location", f"/message/{uuid.uuid4()}")])

    def check(self, req, line):
        """A push service's checks, in order; fills `line` with what it learned and raises Reject."""
        h = req.headers
        if h.get(":method") != "POST":
            raise Reject(405, "MethodNotAllowed")
        path = req.path.split("?", 1)[0]
        sid = path[len(PATH_PREFIX):] if path.startswith(PATH_PREFIX) else ""
        if not ID_RE.match(sid):
            raise Reject(404, "NoSuchSubscription")
        line["token"] = sid
        claims = self.check_vapid(h.get("authorization"), line)
        line["vapid"] = {k: claims.get(k) for k in ("aud", "exp", "sub")}
        ttl = h.get("ttl")
        if ttl is None or not ttl.isdigit():
            raise Reject(400, "BadTTL")
        line["ttl"] = int(ttl)
        urgency = h.get("urgency")
        if urgency is not None and urgency not in URGENCIES:
            raise Reject(400, "BadUrgency")
        line["urgency"] = urgency
        topic = h.get("topic")
        if topic is not None and not TOPIC_RE.match(topic):
            raise Reject(400, "BadTopic")
        line["topic"] = topic
        if h.get("content-encoding") != "aes128gcm":
            raise Reject(400, "BadContentEncoding")
        if len(req.body) > MAX_BODY:
            raise Reject(413, "PayloadTooLarge")
        self.scripted(sid)
        key, auth = self.browser(sid)
        try:
            plaintext = http_ece.decrypt(bytes(req.body), private_key=key, auth_secret=auth, version="aes128gcm")
        except Exception as e:  # http_ece raises ECEException and cryptography's errors
            line["error"] = str(e)
            raise Reject(400, "DecryptionFailed")
        line["bytes"] = len(plaintext)
        try:
            line["payload"] = json.loads(plaintext)
        except ValueError:
            line["payload_text"] = plaintext.decode("utf-8", "replace")

    def check_vapid(self, authorization, line):
        """`vapid t=<JWT>, k=<key>`: the key, then the ES256 signature, aud, exp and sub."""
        if not authorization or not authorization.lower().startswith("vapid "):
            raise Reject(401, "MissingVAPID")
        params = {}
        for part in authorization[6:].split(","):
            name, _, value = part.strip().partition("=")
            params[name.strip().lower()] = value.strip()
        token, k = params.get("t"), params.get("k")
        if not token or not k:
            raise Reject(401, "MalformedVAPID")
        try:
            point = b64url_decode(k)
            public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        except (ValueError, TypeError):
            raise Reject(401, "BadVAPIDKey")
        if len(point) != 65:
            raise Reject(401, "BadVAPIDKey")
        line["k"] = k
        if self.server_key is not None and point != self.server_key:
            # The subscription was made with another applicationServerKey.
            raise Reject(403, "VAPIDKeyMismatch")
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, public_key, algorithms=["ES256"], audience=self.audiences,
                                options={"require": ["aud", "exp", "sub"]})
        except jwt.InvalidTokenError as e:
            line["error"] = f"{type(e).__name__}: {e}"
            raise Reject(401, "BadVAPIDToken")
        if header.get("alg") != "ES256":
            raise Reject(401, "BadVAPIDToken")
        if claims["exp"] - time.time() > MAX_VAPID_SECONDS:
            raise Reject(401, "VAPIDTokenTooLong")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not (sub.startswith("mailto:") or sub.startswith("https://")):
            raise Reject(401, "BadVAPIDSubject")
        return claims

    def scripted(self, sid):
        prefix = next((p for p in PREFIXES if sid.startswith(p)), None)
        if prefix == "gone":
            raise Reject(410, "Gone")
        if prefix == "notfound":
            raise Reject(404, "NoSuchSubscription")
        if prefix == "toolarge":
            raise Reject(413, "PayloadTooLarge")
        if prefix in ("busy", "down"):
            n = self.attempts.get(sid, 0) + 1
            self.attempts[sid] = n
            if n <= (self.args.busy_count if prefix == "busy" else self.args.down_count):
                retry = [("retry-after", str(self.args.retry_after))]
                raise Reject(429, "TooManyRequests", retry) if prefix == "busy" else Reject(503, "ServiceUnavailable", retry)

    def record(self, proto, req, line):
        if self.recorder.fd is None and not self.args.verbose:
            return
        entry = {"ts": round(time.time(), 6), "connection": f"{os.getpid()}/{proto.conn_id}"}
        entry.update(line)
        self.recorder.write(entry)
        if self.args.verbose:
            proto.server.log(f"conn#{proto.conn_id} {req.headers.get(':method')} {req.path} -> {line.get('status')} "
                             f"{line.get('reason') or ''}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Mock Web Push service (RFC 8030/8291/8292, HTTP/2 + TLS).")
    mocklib.add_common_args(p, default_streams=100)
    p.add_argument("--seed", default="herald", help="derives every subscription's browser keys (default herald)")
    p.add_argument("--application-server-key", metavar="B64URL",
                   help="the VAPID public key subscriptions were made with: another k= gets 403 (default: any key)")
    p.add_argument("--audience", action="append", default=[],
                   help="accepted VAPID aud (repeatable). Default: https://127.0.0.1:<port> and https://localhost:<port>")
    p.add_argument("--busy-count", type=int, default=1,
                   help="'busy...' subscriptions get 429 with Retry-After this many times, then 201 (default 1)")
    p.add_argument("--down-count", type=int, default=1,
                   help="'down...' subscriptions get 503 with Retry-After this many times, then 201 (default 1)")
    p.add_argument("--retry-after", type=int, default=1, help="Retry-After seconds on 429/503 (default 1)")
    p.add_argument("--http1", action="store_true",
                   help="speak HTTP/1.1 only (ALPN http/1.1), as a push service without h2; bodies go out chunked")
    p.add_argument("--http1-max-requests", type=int, default=0, metavar="N",
                   help="with --http1: close each connection (connection: close) after N answers (default 0: never)")
    return p.parse_args(argv)


def main():
    args = parse_args()
    mocklib.run(args, WebPushApp, "webpush_mock")


if __name__ == "__main__":
    main()
