#!/usr/bin/env python3
"""Mock APNs provider API: HTTP/2 over TLS (ALPN h2), token (JWT ES256) auth, Apple's status/reason
table, scripted outcomes by device-token prefix. See ops/mocks/README.md for every flag."""

import argparse
import glob
import os
import re
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jwt  # noqa: E402  (PyJWT)
from hpack import NeverIndexedHeaderTuple  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

import mocklib  # noqa: E402
from mocklib import bump, json_response, Response  # noqa: E402

PUSH_TYPES = {"alert", "background", "location", "voip", "complication", "fileprovider", "mdm",
              "liveactivity", "pushtotalk", "widgets", "controls"}
TOPIC_SUFFIXES = ("", ".voip", ".complication", ".pushkit.fileprovider", ".location-query",
                  ".push-type.liveactivity", ".voip-ptt")
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
TOKEN_RE = re.compile(r"^[0-9a-zA-Z]+$")
HEX64_RE = re.compile(r"^[0-9a-fA-F]{64}$")
HEX_RE = re.compile(r"^[0-9a-fA-F]*$")
PATH_PREFIX = "/3/device/"
LIVE_ACTIVITY_SUFFIX = ".push-type.liveactivity"


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)
CHECKED_DUPLICATES = {"authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration",
                      "apns-collapse-id", "apns-id", ":path", ":method"}
# Token prefixes with a scripted outcome, longest first so that "deadline..." style clashes resolve.
PREFIXES = ("wrongtopic", "throttle", "expired", "fail500", "flaky", "dead", "bad")
# The reason an outage (POST /outage) gives by default: Apple's reason for that status. Other statuses get
# InternalServerError (5xx) or BadRequest (4xx, not one of Apple's reasons).
OUTAGE_REASONS = {403: "Forbidden", 404: "BadPath", 405: "MethodNotAllowed", 410: "Unregistered",
                  413: "PayloadTooLarge", 429: "TooManyRequests", 500: "InternalServerError",
                  503: "ServiceUnavailable"}


class Reject(Exception):
    def __init__(self, status, reason, **extra):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.extra = extra


def load_public_key(path):
    data = open(path, "rb").read()
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise SystemExit(f"apns_mock: {path} is not an EC P-256 key")
    return key


def keys_from_dir(d):
    """apns-<KID>.pub.pem, apns-<KID>.p8, AuthKey_<KID>.p8 (private keys give their public half)."""
    keys = {}
    for path in sorted(glob.glob(os.path.join(d, "*"))):
        base = os.path.basename(path)
        m = (re.match(r"^apns-(\w+)\.pub\.pem$", base) or re.match(r"^apns-(\w+)\.p8$", base)
             or re.match(r"^AuthKey_(\w+)\.p8$", base))
        if m and m.group(1) not in keys:
            keys[m.group(1)] = load_public_key(path)
    return keys


class ApnsApp:
    def __init__(self, args):
        self.args = args
        self.keys = {}
        if len(args.key_id) != len(args.public_key):
            raise SystemExit("apns_mock: give --key-id and --public-key in pairs")
        for kid, path in zip(args.key_id, args.public_key):
            self.keys[kid] = load_public_key(path)
        for d in args.keys_dir:
            for kid, key in keys_from_dir(d).items():
                self.keys.setdefault(kid, key)
        if not self.keys and not args.no_auth:
            raise SystemExit("apns_mock: no verification keys (give --key-id/--public-key or --keys-dir, or --no-auth)")
        self.teams = set(args.team)
        if not self.teams and not args.no_auth:
            raise SystemExit("apns_mock: give --team TEAMID (or --no-auth)")
        self.topics = set(args.topic)
        self.recorder = mocklib.Recorder(args.record)
        self.jwt_cache = {}   # token string -> (claims, None) or (None, reason)
        # Apple: "only one stream is allowed until a request with a valid token goes through".
        self.initial_max_streams = 1 if args.streams_until_auth else None
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self):
        self.requests = 0
        self.accepted = 0
        self.rejected = {}
        self.tokens_seen = set()
        self.token_attempts = {}   # device token -> requests that reached the scripted stage
        self.max_tokens_per_connection = 0

    def on_connection_made(self, proto):
        proto.state["jwt"] = None
        proto.state["jwt_since"] = 0.0
        proto.state["jwts"] = 0
        proto.state["team"] = None
        proto.state["authed"] = False

    def goaway_debug(self):
        return b'{"reason":"Shutdown"}'

    def stats(self):
        return {
            "requests": self.requests,
            "accepted": self.accepted,
            "rejected": dict(self.rejected),
            "tokens_seen": len(self.tokens_seen),
            "max_tokens_per_connection": self.max_tokens_per_connection,
        }

    def admin_routes(self):
        def reset(q):
            self.reset()
            return 200, {"reset": True}

        return {
            ("GET", "/stats"): lambda q: (200, self.stats()),
            ("POST", "/reset"): reset,
        }

    # ------------------------------------------------------------------ request handling
    def handle(self, proto, req):
        self.requests += 1
        token = None
        status, reason, extra = 200, None, {}
        try:
            token = self.validate(proto, req)
            self.scripted(token)
        except Reject as r:
            status, reason, extra = r.status, r.reason, r.extra
        if status == 200:
            self.accepted += 1
        else:
            bump(self.rejected, reason)
        return self.answer(proto, req, token, status, reason, extra)

    # An outage answers before any check, so it sees the path only.
    def is_push(self, req):
        return req.path.startswith(PATH_PREFIX)

    @staticmethod
    def outage_reason(status):
        return OUTAGE_REASONS.get(status) or ("InternalServerError" if status >= 500 else "BadRequest")

    def outage_answer(self, proto, req, outage):
        self.requests += 1
        reason = outage.reason or self.outage_reason(outage.status)
        extra = {"timestamp": int(time.time() * 1000)} if outage.status == 410 else {}
        return self.answer(proto, req, None, outage.status, reason, extra, outage.headers())

    def outage_drop(self, proto, req):
        self.requests += 1
        self.answer(proto, req, None, 0, "dropped")

    def answer(self, proto, req, token, status, reason, extra=None, more_headers=()):
        """Records the request and builds its response. Status 0 (dropped) is only recorded."""
        h = req.headers
        apns_id = h.get("apns-id")
        if apns_id is None or not UUID_RE.match(apns_id):
            apns_id = str(uuid.uuid4())
        if self.recorder.fd is not None:
            self.record(proto, req, token, apns_id, status, reason)
        if self.args.verbose:
            proto.server.log(f"conn#{proto.conn_id} {h.get(':method')} {h.get(':path')} -> {status} {reason or ''}")
        if status == 0:
            return None
        headers = [NeverIndexedHeaderTuple(b"apns-id", apns_id.encode())]
        if self.args.unique_id:
            headers.append(("apns-unique-id", str(uuid.uuid4())))
        headers.extend(more_headers)
        if status == 200:
            return Response(200, headers)
        body = {"reason": reason}
        body.update(extra or {})
        return json_response(status, body, headers)

    def validate(self, proto, req):
        """Checks in pushy's MockApnsServer order; returns the device token."""
        h = req.headers
        for name in req.duplicates:
            if name in CHECKED_DUPLICATES:
                raise Reject(400, "DuplicateHeaders")
        apns_id = h.get("apns-id")
        if apns_id is not None and not UUID_RE.match(apns_id):
            raise Reject(400, "BadMessageId")
        if h.get(":method") != "POST":
            raise Reject(405, "MethodNotAllowed")
        topic = h.get("apns-topic")
        if topic is None or topic == "":
            raise Reject(400, "MissingTopic")
        collapse = h.get("apns-collapse-id")
        if collapse is not None and len(collapse.encode()) > 64:
            raise Reject(400, "BadCollapseId")
        expiration = h.get("apns-expiration")
        if expiration is not None and not expiration.isdigit():
            raise Reject(400, "BadExpirationDate")
        priority = h.get("apns-priority")
        if priority is not None and priority not in ("1", "5", "10"):
            raise Reject(400, "BadPriority")
        push_type = h.get("apns-push-type")
        if push_type is not None and push_type not in PUSH_TYPES:
            raise Reject(400, "InvalidPushType")
        if push_type == "background" and (priority or "10") != "5":
            raise Reject(400, "BadPriority")
        if push_type == "liveactivity" and (priority or "10") not in ("5", "10"):
            raise Reject(400, "BadPriority")
        path = h.get(":path", "")
        if not path.startswith(PATH_PREFIX):
            raise Reject(404, "BadPath")
        token = path[len(PATH_PREFIX):]
        if token == "":
            raise Reject(400, "MissingDeviceToken")
        if not TOKEN_RE.match(token):
            raise Reject(400, "BadDeviceToken")
        prefix = self.prefix_of(token)
        if self.args.strict_tokens:
            rest = token[len(prefix):] if prefix else token
            if not (HEX_RE.match(rest) if prefix else HEX64_RE.match(token)):
                raise Reject(400, "BadDeviceToken")
        if prefix == "dead":
            raise Reject(410, "Unregistered", timestamp=int(time.time() * 1000) - self.args.dead_age_ms)
        if prefix == "expired":
            raise Reject(410, "ExpiredToken", timestamp=int(time.time() * 1000) - self.args.dead_age_ms)
        if prefix == "bad":
            raise Reject(400, "BadDeviceToken")
        if prefix == "wrongtopic":
            raise Reject(400, "DeviceTokenNotForTopic")
        self.authenticate(proto, h, topic)
        # Activity tokens belong to the liveactivity topic, and that topic takes no other push type.
        if push_type == "liveactivity" and not topic.endswith(LIVE_ACTIVITY_SUFFIX):
            raise Reject(400, "DeviceTokenNotForTopic")
        if push_type != "liveactivity" and topic.endswith(LIVE_ACTIVITY_SUFFIX):
            raise Reject(400, "InvalidPushType")
        size = len(req.body)
        if size == 0:
            raise Reject(400, "PayloadEmpty")
        limit = 5120 if push_type == "voip" else 4096
        if size > limit:
            raise Reject(413, "PayloadTooLarge")
        if push_type == "liveactivity":
            problem = self.live_activity_problem(req.body)
            if problem:
                raise Reject(400, "InvalidLiveActivityPayload", detail=problem)
        return token

    @staticmethod
    def live_activity_problem(body):
        """What a device would drop a Live Activity push for (APNs itself accepts it), or None."""
        try:
            payload = mocklib.json.loads(bytes(body))
        except ValueError:
            return "the payload is not JSON"
        aps = payload.get("aps") if isinstance(payload, dict) else None
        if not isinstance(aps, dict):
            return "aps is missing"
        if not is_int(aps.get("timestamp")):
            return "aps.timestamp (unix seconds) is missing"
        event = aps.get("event")
        if event not in ("start", "update", "end"):
            return "aps.event must be start, update or end"
        if event != "end" and not isinstance(aps.get("content-state"), dict):
            return "aps.content-state (an object) is missing"
        if event == "start" and not (isinstance(aps.get("attributes-type"), str) and isinstance(aps.get("attributes"), dict)):
            return "a start needs aps.attributes-type and aps.attributes"
        for key in ("dismissal-date", "stale-date"):
            if key in aps and not is_int(aps[key]):
                return f"aps.{key} must be unix seconds"
        return None

    @staticmethod
    def prefix_of(token):
        if not token[:1].isalpha():
            return None
        low = token.lower()
        for p in PREFIXES:
            if low.startswith(p):
                return p
        return None

    def topic_allowed(self, topic):
        if not self.topics:
            return True
        for base in self.topics:
            if topic.startswith(base) and topic[len(base):] in TOPIC_SUFFIXES:
                return True
        return False

    def verify_jwt(self, token):
        cached = self.jwt_cache.get(token)
        if cached is not None:
            return cached
        result = (None, "InvalidProviderToken")
        try:
            header = jwt.get_unverified_header(token)
            kid = header.get("kid")
            key = self.keys.get(kid) if isinstance(kid, str) else None
            if key is not None and header.get("alg") == "ES256":
                claims = jwt.decode(token, key, algorithms=["ES256"], options={
                    "verify_signature": True, "verify_exp": False, "verify_nbf": False,
                    "verify_iat": False, "verify_aud": False, "verify_iss": False})
                if isinstance(claims.get("iss"), str) and isinstance(claims.get("iat"), (int, float)) \
                        and not isinstance(claims.get("iat"), bool):
                    result = (claims, None)
        except jwt.PyJWTError:
            pass
        if len(self.jwt_cache) > 10000:
            self.jwt_cache.clear()
        self.jwt_cache[token] = result
        return result

    def authenticate(self, proto, h, topic):
        if self.args.no_auth:
            if not self.topic_allowed(topic):
                raise Reject(400, "TopicDisallowed")
            return
        auth = h.get("authorization")
        if not auth:
            raise Reject(403, "MissingProviderToken")
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Reject(403, "InvalidProviderToken")
        self.tokens_seen.add(token)
        claims, reason = self.verify_jwt(token)
        if claims is None:
            raise Reject(403, reason)
        team = claims["iss"]
        if team not in self.teams:
            raise Reject(403, "InvalidProviderToken")
        st = proto.state
        if st["team"] is None:
            st["team"] = team
        elif st["team"] != team:
            # One developer team per connection (pushy pins the first team it sees).
            raise Reject(403, "InvalidProviderToken")
        now = time.time()
        iat = claims["iat"]
        if iat > now + self.args.clock_skew:
            raise Reject(403, "InvalidProviderToken")
        if now - iat > self.args.token_max_age:
            raise Reject(403, "ExpiredProviderToken")
        if st["jwt"] != token:
            if st["jwt"] is not None and now - st["jwt_since"] < self.args.min_token_interval:
                raise Reject(429, "TooManyProviderTokenUpdates")
            st["jwt"] = token
            st["jwt_since"] = now
            st["jwts"] += 1
            if st["jwts"] > self.max_tokens_per_connection:
                self.max_tokens_per_connection = st["jwts"]
        if not self.topic_allowed(topic):
            raise Reject(400, "TopicDisallowed")
        if not st["authed"]:
            st["authed"] = True
            if self.args.streams_until_auth:
                proto.set_max_streams(proto.server.max_streams)

    def scripted(self, token):
        prefix = self.prefix_of(token)
        if prefix == "throttle":
            n = self.token_attempts.get(token, 0) + 1
            self.token_attempts[token] = n
            if n <= self.args.throttle_count:
                raise Reject(429, "TooManyRequests")
        elif prefix == "flaky":
            n = self.token_attempts.get(token, 0) + 1
            self.token_attempts[token] = n
            if n <= self.args.flaky_count:
                raise Reject(503, "ServiceUnavailable")
        elif prefix == "fail500":
            raise Reject(500, "InternalServerError")

    def record(self, proto, req, token, apns_id, status, reason):
        h = req.headers
        conn = f"{os.getpid()}/{proto.conn_id}"
        body = bytes(req.body)
        try:
            payload = mocklib.json.loads(body) if body else None
        except ValueError:
            payload = body.decode("utf-8", "replace")
        if token is None:
            path = h.get(":path", "")
            token = path[len(PATH_PREFIX):] if path.startswith(PATH_PREFIX) else None
        prio = h.get("apns-priority")
        exp = h.get("apns-expiration")
        self.recorder.write({
            "ts": round(time.time(), 6),
            "connection": conn,
            "token": token,
            "topic": h.get("apns-topic"),
            "push_type": h.get("apns-push-type"),
            "priority": int(prio) if prio is not None and prio.isdigit() else prio,
            "expiration": int(exp) if exp is not None and exp.isdigit() else exp,
            "collapse_id": h.get("apns-collapse-id"),
            "apns_id": apns_id,
            "status": status,
            "reason": reason,
            "payload": payload,
        })


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Mock APNs provider API (HTTP/2 + TLS, JWT auth).")
    mocklib.add_common_args(p, default_streams=1000)
    p.add_argument("--team", action="append", default=[], metavar="TEAMID",
                   help="accepted team id (JWT iss); repeatable")
    p.add_argument("--key-id", action="append", default=[], metavar="KID",
                   help="key id (JWT kid); pair with --public-key; repeatable")
    p.add_argument("--public-key", action="append", default=[], metavar="PEM",
                   help="EC P-256 public key PEM (or the .p8 private key) for the matching --key-id")
    p.add_argument("--keys-dir", action="append", default=[], metavar="DIR",
                   help="load apns-<KID>.pub.pem / apns-<KID>.p8 / AuthKey_<KID>.p8 from DIR; repeatable")
    p.add_argument("--topic", action="append", default=[],
                   help="allowed topic (bundle id; its .voip/.complication/... suffixes too); repeatable; "
                        "none = any topic")
    p.add_argument("--throttle-count", type=int, default=2,
                   help="'throttle...' tokens get 429 TooManyRequests this many times, then 200 (default 2)")
    p.add_argument("--flaky-count", type=int, default=1,
                   help="'flaky...' tokens get 503 ServiceUnavailable this many times, then 200 (default 1)")
    p.add_argument("--dead-age-ms", type=int, default=0,
                   help="410 timestamp = now minus this many ms (default 0)")
    p.add_argument("--min-token-interval", type=float, default=1200.0,
                   help="a connection changing JWT sooner than this (s) gets 429 TooManyProviderTokenUpdates "
                        "(default 1200; 0 disables)")
    p.add_argument("--token-max-age", type=float, default=3600.0,
                   help="JWT iat older than this (s) gives 403 ExpiredProviderToken (default 3600)")
    p.add_argument("--clock-skew", type=float, default=300.0,
                   help="JWT iat more than this (s) in the future is InvalidProviderToken (default 300)")
    p.add_argument("--streams-until-auth", action="store_true",
                   help="advertise 1 stream per connection until its first valid JWT, then --max-streams")
    p.add_argument("--strict-tokens", action="store_true",
                   help="require 64 hex digits (scripted prefix + hex is still accepted)")
    p.add_argument("--unique-id", action="store_true", help="add apns-unique-id to responses (sandbox style)")
    p.add_argument("--no-auth", action="store_true", help="do not check the authorization header")
    return p.parse_args(argv)


def main():
    args = parse_args()
    mocklib.run(args, ApnsApp, "apns_mock")


if __name__ == "__main__":
    main()
