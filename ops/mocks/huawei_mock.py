#!/usr/bin/env python3
"""Mock Huawei Push Kit (POST /v1/<app id>/messages:send) plus its OAuth 2.0 token endpoint (client
credentials grant): HTTP/2 over TLS (ALPN h2), bearer tokens checked, Push Kit's {code, msg, requestId}
replies with its result codes, scripted outcomes by device-token prefix. See ops/mocks/README.md."""

import argparse
import json
import os
import re
import secrets
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mocklib  # noqa: E402
from mocklib import bump, json_response  # noqa: E402

SEND_RE = re.compile(r"^/v1/([^/]+)/messages:send$")
TTL_RE = re.compile(r"^\d+(\.\d{1,9})?[sS]?$")
MESSAGE_FIELDS = {"data", "notification", "android", "apns", "webpush", "token", "topic", "condition"}
ANDROID_FIELDS = {"collapse_key", "urgency", "category", "ttl", "bi_tag", "receipt_id", "fast_app_target", "data",
                  "notification"}
MAX_DATA_BYTES = 4096
MAX_TOKENS = 1000
# Token prefixes with a scripted outcome.
PREFIXES = ("dead", "illegal", "unavailable", "internal")

SUCCESS = ("80000000", "Success")
PARTIAL = "80100000"
PARAMETER = ("80100001", "Some request parameters are incorrect.")
BODY = ("80100003", "Incorrect message structure.")
AUTH = ("80200001", "Oauth authentication error.")
AUTH_EXPIRED = ("80200003", "Oauth Token expired.")
NO_PERMISSION = ("80300002", "The current app does not have the permission to send messages.")
ALL_INVALID = ("80300007", "All the tokens are invalid.")
TOO_BIG = ("80300008", "The message body size exceeds the default value.")
TOO_MANY_TOKENS = ("80300010", "The number of tokens in the message body exceeds the default value.")
INTERNAL = ("81000001", "Internal error.")
# What an outage (POST /outage) of a status answers: HTTP status -> (code, msg). Other statuses carry
# no code.
OUTAGE_ERRORS = {
    400: PARAMETER,
    401: AUTH_EXPIRED,
    403: NO_PERMISSION,
    413: TOO_BIG,
    500: INTERNAL,
    503: ("81000001", "The system is busy; flow control."),
}


class PushError(Exception):
    """A Push Kit failure: the HTTP status and the result code with its message."""

    def __init__(self, http, code, message, headers=()):
        super().__init__(message)
        self.http = http
        self.code = code
        self.message = message
        self.headers = list(headers)

    def response(self):
        body = {"msg": self.message, "requestId": request_id()}
        if self.code is not None:
            body["code"] = self.code
        return json_response(self.http, body, self.headers)

    @property
    def tally(self):
        return self.code or f"HTTP{self.http}"


def request_id():
    return f"{int(time.time() * 1000)}{secrets.randbelow(10 ** 8):08d}"


class OAuthError(Exception):
    """A refusal of the token endpoint: Huawei's numeric error and sub_error."""

    def __init__(self, http, error, sub_error, description):
        super().__init__(description)
        self.http = http
        self.error = error
        self.sub_error = sub_error
        self.description = description


class HuaweiApp(mocklib.BearerApp):
    def __init__(self, args):
        super().__init__()
        self.args = args
        if args.client_secret_file:
            with open(args.client_secret_file) as f:
                self.client_secret = f.read().strip()
        else:
            self.client_secret = args.client_secret
        if not self.client_secret:
            raise SystemExit("huawei_mock: give --client-secret-file FILE or --client-secret TEXT")
        self.recorder = mocklib.Recorder(args.record)

    def admin_routes(self):
        def expire(q):
            # The tokens stay known, so that the next push with one gets 80200003 (expired).
            n = len(self.access_tokens)
            for token in self.access_tokens:
                self.access_tokens[token] = 0
            return 200, {"expired": n}

        return {**super().admin_routes(), ("POST", "/expire-tokens"): expire}

    # ------------------------------------------------------------------ dispatch
    def handle(self, proto, req):
        path = req.path.split("?", 1)[0]
        if path == self.args.token_path:
            return self.handle_token(proto, req)
        self.requests += 1
        record = {"ts": round(time.time(), 6), "connection": f"{os.getpid()}/{proto.conn_id}"}
        try:
            self.handle_send(req, record)
            self.accepted += 1
            record.update(status=200, code=SUCCESS[0])
            resp = json_response(200, {"code": SUCCESS[0], "msg": SUCCESS[1], "requestId": request_id()})
        except PushError as e:
            bump(self.rejected, e.tally)
            record.update(status=e.http, code=e.code, error_message=e.message)
            resp = e.response()
        if self.recorder.fd is not None:
            self.recorder.write(record)
        if self.args.verbose:
            proto.server.log(f"conn#{proto.conn_id} {req.method} {req.path} -> {record['status']} {record['code']}")
        return resp

    # ------------------------------------------------------------------ outage (POST /outage)
    # Only messages:send is affected: the token endpoint keeps working. The answer comes before any check.
    def is_push(self, req):
        return SEND_RE.match(req.path.split("?", 1)[0]) is not None

    @staticmethod
    def outage_error(status):
        return OUTAGE_ERRORS.get(status, (None, "The request failed."))

    def outage_reason(self, status):
        return self.outage_error(status)[0] or f"HTTP{status}"

    def outage_answer(self, proto, req, outage):
        code, message = self.outage_error(outage.status)
        error = PushError(outage.status, outage.reason or code, message, outage.headers())
        self.outage_record(proto, req, outage.status, error.code, message)
        return error.response()

    def outage_drop(self, proto, req):
        self.outage_record(proto, req, 0, "dropped", None)

    def outage_record(self, proto, req, status, code, message):
        self.requests += 1
        if self.recorder.fd is not None:
            record = {"ts": round(time.time(), 6), "connection": f"{os.getpid()}/{proto.conn_id}"}
            try:  # the message and its token when the body parses; the outage answered before any check
                msg = json.loads(bytes(req.body))["message"]
                record.update(message=msg, token=msg["token"][0])
            except (ValueError, KeyError, TypeError, IndexError):
                pass
            record.update(status=status, code=code)
            if message is not None:
                record["error_message"] = message
            self.recorder.write(record)

    # ------------------------------------------------------------------ OAuth 2.0 token endpoint
    def handle_token(self, proto, req):
        self.token_requests += 1
        try:
            token = self.exchange(req)
        except OAuthError as e:
            bump(self.token_rejected, f"{e.error}/{e.sub_error}")
            if self.args.verbose:
                proto.server.log(f"conn#{proto.conn_id} token request refused: {e.description}")
            return json_response(e.http, {"error": e.error, "sub_error": e.sub_error, "error_description": e.description})
        self.tokens_issued += 1
        return json_response(200, {"access_token": token, "expires_in": self.args.token_ttl, "token_type": "Bearer"})

    def exchange(self, req):
        if req.method != "POST":
            raise OAuthError(405, 1101, 20001, "invalid request")
        if not req.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            raise OAuthError(400, 1101, 20001, "invalid request: content-type")
        try:
            form = dict(urllib.parse.parse_qsl(bytes(req.body).decode("utf-8"), keep_blank_values=True,
                                               strict_parsing=True))
        except (UnicodeDecodeError, ValueError):
            raise OAuthError(400, 1101, 20001, "invalid request")
        if form.get("grant_type") != "client_credentials":
            raise OAuthError(400, 1101, 20001, "unsupported grant_type")
        if form.get("client_id") != self.args.app_id:
            raise OAuthError(400, 1102, 20003, "invalid client_id")
        if form.get("client_secret") != self.client_secret:
            raise OAuthError(400, 1101, 20058, "invalid client_secret")
        return self.issue_token("CV6.mock.", self.args.token_ttl)

    # ------------------------------------------------------------------ messages:send
    def handle_send(self, req, record):
        m = SEND_RE.match(req.path.split("?", 1)[0])
        if m is None or req.method != "POST":
            raise PushError(404, None, "Not found.")
        app_id = urllib.parse.unquote(m.group(1))
        record["app_id"] = app_id
        self.check_auth(req)
        if app_id != self.args.app_id:
            raise PushError(403, *NO_PERMISSION)
        try:
            body = json.loads(bytes(req.body) or b"null")
        except ValueError:
            raise PushError(400, *BODY)
        if not isinstance(body, dict) or not set(body) <= {"validate_only", "message"}:
            raise PushError(400, *BODY)
        if "validate_only" in body and not isinstance(body["validate_only"], bool):
            raise PushError(400, *PARAMETER)
        msg = body.get("message")
        record["message"] = msg
        if not isinstance(msg, dict) or not set(msg) <= MESSAGE_FIELDS:
            raise PushError(400, *BODY)
        tokens = msg.get("token")
        if not isinstance(tokens, list) or not tokens or len(tokens) > MAX_TOKENS:
            raise PushError(400, *TOO_MANY_TOKENS)
        if not all(isinstance(t, str) and t for t in tokens):
            raise PushError(400, *PARAMETER)
        record["token"] = tokens[0]
        if "data" in msg and not isinstance(msg["data"], str):
            raise PushError(400, *PARAMETER)
        self.check_android(msg.get("android"))
        if len(msg.get("data", "").encode()) > MAX_DATA_BYTES:
            raise PushError(413, *TOO_BIG)
        self.scripted(tokens)

    def check_auth(self, req):
        auth = req.headers.get("authorization")
        if not auth:
            raise PushError(401, *AUTH)
        scheme, _, token = auth.partition(" ")
        expiry = self.access_tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if expiry is None:
            raise PushError(401, *AUTH)
        if expiry <= time.time():
            raise PushError(401, *AUTH_EXPIRED)

    @staticmethod
    def check_android(android):
        if android is None:
            return
        if not isinstance(android, dict) or not set(android) <= ANDROID_FIELDS:
            raise PushError(400, *BODY)
        if android.get("urgency", "NORMAL") not in ("HIGH", "NORMAL"):
            raise PushError(400, *PARAMETER)
        ttl = android.get("ttl")
        if ttl is not None and (not isinstance(ttl, str) or not TTL_RE.match(ttl)):
            raise PushError(400, *PARAMETER)
        key = android.get("collapse_key")
        if key is not None and (not isinstance(key, int) or isinstance(key, bool) or not -1 <= key <= 100):
            raise PushError(400, "80100013", "The collapse_key message field is invalid.")

    def scripted(self, tokens):
        prefixes = [self.prefix_of(t) for t in tokens]
        if tokens and all(p == "dead" for p in prefixes):
            raise PushError(400, *ALL_INVALID)
        illegal = [t for t, p in zip(tokens, prefixes) if p in ("dead", "illegal")]
        if illegal:
            detail = {"success": len(tokens) - len(illegal), "failure": len(illegal), "illegal_tokens": illegal}
            raise PushError(200, PARTIAL, json.dumps(detail, separators=(",", ":")))
        token = tokens[0]
        prefix = prefixes[0]
        if prefix not in ("unavailable", "internal"):
            return
        n = self.token_attempts.get(token, 0) + 1
        self.token_attempts[token] = n
        if prefix == "unavailable" and n <= self.args.unavailable_count:
            raise PushError(503, *OUTAGE_ERRORS[503], headers=[("retry-after", str(self.args.retry_after))])
        if prefix == "internal" and n <= self.args.internal_count:
            raise PushError(500, *INTERNAL)

    @staticmethod
    def prefix_of(token):
        low = token[:12].lower()
        for p in PREFIXES:
            if low.startswith(p):
                return p
        return None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Mock Huawei Push Kit + OAuth 2.0 token endpoint (HTTP/2 + TLS).")
    mocklib.add_common_args(p, default_streams=100)
    p.add_argument("--app-id", required=True, help="the app ID: the client_id accepted and the <app id> of the send path")
    p.add_argument("--client-secret-file", metavar="FILE", help="file holding the accepted client_secret (stripped)")
    p.add_argument("--client-secret", help="the accepted client_secret (when no file is given)")
    p.add_argument("--token-path", default="/oauth2/v3/token", help="path of the token endpoint (default /oauth2/v3/token)")
    p.add_argument("--token-ttl", type=int, default=3600, help="access-token lifetime, s (expires_in; default 3600)")
    p.add_argument("--unavailable-count", type=int, default=1,
                   help="'unavailable...' tokens get 503 (flow control) this many times, then 80000000 (default 1)")
    p.add_argument("--internal-count", type=int, default=1,
                   help="'internal...' tokens get 500 81000001 this many times, then 80000000 (default 1)")
    p.add_argument("--retry-after", type=int, default=1, help="Retry-After seconds on 503 (default 1)")
    return p.parse_args(argv)


def main():
    args = parse_args()
    mocklib.run(args, HuaweiApp, "huawei_mock")


if __name__ == "__main__":
    main()
