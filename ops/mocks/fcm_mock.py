#!/usr/bin/env python3
"""Mock FCM HTTP v1 API plus Google's OAuth2 token endpoint: HTTP/2 over TLS (ALPN h2), service-account
JWT (RS256) exchange, google.rpc-shaped errors with FcmError details, scripted outcomes by registration
token prefix. See ops/mocks/README.md for every flag."""

import argparse
import json
import os
import re
import secrets
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jwt  # noqa: E402  (PyJWT)
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402

import mocklib  # noqa: E402
from mocklib import bump, json_response  # noqa: E402

SCOPES_OK = {"https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform"}
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SEND_RE = re.compile(r"^/v1/projects/([^/]+)/messages:send$")
FCM_TOKEN_RE = re.compile(r"^[A-Za-z0-9_\-:.]+$")
TOPIC_RE = re.compile(r"^[a-zA-Z0-9\-_.~%]+$")
TTL_RE = re.compile(r"^\d+(\.\d{1,9})?s$")
FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
HTTP_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
               429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

MESSAGE_FIELDS = {"name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions",
                  "token", "topic", "condition"}
ANDROID_FIELDS = {"collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name",
                  "restrictedPackageName", "data", "notification", "fcm_options", "fcmOptions", "direct_boot_ok",
                  "directBootOk", "bandwidth_constrained_ok", "bandwidthConstrainedOk", "restricted_satellite_ok",
                  "restrictedSatelliteOk"}
# Token prefixes with a scripted outcome.
PREFIXES = ("unavailable", "thirdparty", "internal", "mismatch", "invalid", "quota", "dead")
QUOTA_MESSAGE = ("Quota exceeded for quota metric 'Messages' and limit 'Messages per minute' of service "
                 "'fcm.googleapis.com'.")
UNAVAILABLE_MESSAGE = "The service is currently unavailable."
INTERNAL_MESSAGE = "Internal error encountered."
# What an outage (POST /outage) of a status answers: google.rpc status, message, FcmError errorCode. The
# same as the scripted token prefixes. Other 5xx: UNAVAILABLE; other 4xx: UNKNOWN, UNSPECIFIED_ERROR.
OUTAGE_ERRORS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument.", "INVALID_ARGUMENT"),
    401: ("UNAUTHENTICATED", "Auth error from APNS or Web Push Service", "THIRD_PARTY_AUTH_ERROR"),
    403: ("PERMISSION_DENIED", "SenderId mismatch", "SENDER_ID_MISMATCH"),
    404: ("NOT_FOUND", "Requested entity was not found.", "UNREGISTERED"),
    429: ("RESOURCE_EXHAUSTED", QUOTA_MESSAGE, "QUOTA_EXCEEDED"),
    500: ("INTERNAL", INTERNAL_MESSAGE, "INTERNAL"),
    503: ("UNAVAILABLE", UNAVAILABLE_MESSAGE, "UNAVAILABLE"),
}


class RpcError(Exception):
    """A google.rpc error; error_code is the FcmError errorCode to put in details (or None)."""

    def __init__(self, http, message, error_code=None, extra_details=(), headers=(), rpc_status=None):
        super().__init__(message)
        self.http = http
        self.message = message
        self.error_code = error_code
        self.extra_details = list(extra_details)
        self.headers = list(headers)
        self.rpc_status = rpc_status or HTTP_STATUS.get(http, "UNKNOWN")

    def response(self):
        details = []
        if self.error_code:
            details.append({"@type": FCM_ERROR, "errorCode": self.error_code})
        details.extend(self.extra_details)
        err = {"code": self.http, "message": self.message, "status": self.rpc_status}
        if details:
            err["details"] = details
        return json_response(self.http, {"error": err}, self.headers)

    @property
    def tally(self):
        return self.error_code or HTTP_STATUS.get(self.http, str(self.http))


def invalid(message, field=None):
    extra = []
    if field:
        extra.append({"@type": BAD_REQUEST, "fieldViolations": [{"field": field, "description": message}]})
    return RpcError(400, message, "INVALID_ARGUMENT", extra)


class OAuthError(Exception):
    def __init__(self, error, description, http=400):
        super().__init__(description)
        self.error = error
        self.description = description
        self.http = http


class FcmApp(mocklib.BearerApp):
    def __init__(self, args):
        super().__init__()
        self.args = args
        sa = {}
        if args.service_account:
            with open(args.service_account) as f:
                sa = json.load(f)
        self.client_email = args.client_email or sa.get("client_email")
        self.project = args.project or sa.get("project_id") or "herald-test"
        self.key_id = args.private_key_id or sa.get("private_key_id")
        if args.public_key:
            data = open(args.public_key, "rb").read()
            try:
                self.public_key = serialization.load_pem_public_key(data)
            except ValueError:
                self.public_key = serialization.load_pem_private_key(data, password=None).public_key()
        elif sa.get("private_key"):
            self.public_key = serialization.load_pem_private_key(sa["private_key"].encode(), password=None).public_key()
        else:
            raise SystemExit("fcm_mock: give --public-key PEM or --service-account JSON")
        if not isinstance(self.public_key, rsa.RSAPublicKey):
            raise SystemExit("fcm_mock: the service-account key must be RSA")
        if not self.client_email:
            raise SystemExit("fcm_mock: give --client-email or --service-account")
        self.token_uris = list(args.token_uri)
        sa_uri = sa.get("token_uri")
        if sa_uri and "PORT" not in sa_uri and sa_uri not in self.token_uris:
            self.token_uris.append(sa_uri)
        self.explicit_token_uris = bool(args.token_uri)
        self.token_paths = {"/token"}
        for uri in self.token_uris:
            self.token_paths.add(urllib.parse.urlsplit(uri).path or "/")
        self.recorder = mocklib.Recorder(args.record)

    def on_listening(self, port):
        # With no --token-uri the mock's own address is the audience (the service account JSON's
        # token_uri must then point here).
        if not self.explicit_token_uris:
            for host in ("127.0.0.1", "localhost"):
                uri = f"https://{host}:{port}/token"
                if uri not in self.token_uris:
                    self.token_uris.append(uri)

    # ------------------------------------------------------------------ state
    def goaway_debug(self):
        return b""

    def admin_routes(self):
        def revoke(q):
            n = len(self.access_tokens)
            self.access_tokens.clear()
            return 200, {"revoked": n}

        return {**super().admin_routes(), ("POST", "/revoke-tokens"): revoke}

    # ------------------------------------------------------------------ dispatch
    def handle(self, proto, req):
        path = req.path.split("?", 1)[0]
        if path in self.token_paths and not SEND_RE.match(path):
            return self.handle_token(proto, req)
        self.requests += 1
        record = {"ts": round(time.time(), 6), "connection": f"{os.getpid()}/{proto.conn_id}"}
        try:
            name = self.handle_send(req, record)
            self.accepted += 1
            record.update(status=200, error=None, name=name)
            resp = json_response(200, {"name": name})
        except RpcError as e:
            bump(self.rejected, e.tally)
            record.update(status=e.http, error=e.tally, error_message=e.message)
            resp = e.response()
        if self.recorder.fd is not None:
            self.recorder.write(record)
        if self.args.verbose:
            proto.server.log(f"conn#{proto.conn_id} {req.method} {req.path} -> {record['status']} {record['error'] or ''}")
        return resp

    # ------------------------------------------------------------------ outage (POST /outage)
    # Only messages:send is affected: the token endpoint keeps working. The answer comes before any check.
    def is_push(self, req):
        return SEND_RE.match(req.path.split("?", 1)[0]) is not None

    @staticmethod
    def outage_error(status):
        if status in OUTAGE_ERRORS:
            return OUTAGE_ERRORS[status]
        if status >= 500:
            return ("UNAVAILABLE", UNAVAILABLE_MESSAGE, "UNAVAILABLE")
        return ("UNKNOWN", "The request failed.", "UNSPECIFIED_ERROR")

    def outage_reason(self, status):
        return self.outage_error(status)[2]

    def outage_answer(self, proto, req, outage):
        rpc_status, message, code = self.outage_error(outage.status)
        error = RpcError(outage.status, message, outage.reason or code, headers=outage.headers(),
                         rpc_status=rpc_status)
        self.outage_record(proto, req, outage.status, error.tally, message)
        return error.response()

    def outage_drop(self, proto, req):
        self.outage_record(proto, req, 0, "dropped", None)

    def outage_record(self, proto, req, status, error, message):
        self.requests += 1
        if self.recorder.fd is not None:
            record = {"ts": round(time.time(), 6), "connection": f"{os.getpid()}/{proto.conn_id}",
                      "project": urllib.parse.unquote(SEND_RE.match(req.path.split("?", 1)[0]).group(1))}
            try:  # the message and its target when the body parses; the outage answered before any check
                msg = json.loads(bytes(req.body))["message"]
                target = next(k for k in ("token", "topic", "condition") if k in msg)
                record.update(message=msg, target=target, **{target: msg[target]})
            except (ValueError, KeyError, TypeError, StopIteration):
                pass
            record.update(status=status, error=error)
            if message is not None:
                record["error_message"] = message
            self.recorder.write(record)
        if self.args.verbose:
            proto.server.log(f"conn#{proto.conn_id} {req.method} {req.path} -> outage {status} {error}")

    # ------------------------------------------------------------------ OAuth2 token endpoint
    def handle_token(self, proto, req):
        self.token_requests += 1
        try:
            token = self.exchange(req)
        except OAuthError as e:
            bump(self.token_rejected, e.error)
            if self.args.verbose:
                proto.server.log(f"conn#{proto.conn_id} token exchange refused: {e.error}: {e.description}")
            return json_response(e.http, {"error": e.error, "error_description": e.description},
                                 [("cache-control", "no-store")])
        self.tokens_issued += 1
        if self.args.verbose:
            proto.server.log(f"conn#{proto.conn_id} token issued")
        return json_response(200, {"access_token": token, "expires_in": self.args.token_ttl, "token_type": "Bearer"},
                             [("cache-control", "no-store")])

    def exchange(self, req):
        if req.method != "POST":
            raise OAuthError("invalid_request", "Token endpoint requires POST", 405)
        try:
            form = dict(urllib.parse.parse_qsl(bytes(req.body).decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            raise OAuthError("invalid_request", "Malformed request body")
        grant = form.get("grant_type")
        if not grant:
            raise OAuthError("invalid_request", "Missing required parameter: grant_type")
        if grant != GRANT_TYPE:
            raise OAuthError("unsupported_grant_type", f"Invalid grant_type: {grant}")
        assertion = form.get("assertion")
        if not assertion:
            raise OAuthError("invalid_request", "Missing required parameter: assertion")
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.PyJWTError:
            raise OAuthError("invalid_grant", "Invalid JWT: Malformed token.")
        if header.get("alg") != "RS256":
            raise OAuthError("invalid_grant", "Invalid JWT Signature.")
        kid = header.get("kid")
        if kid is not None and self.key_id and kid != self.key_id:
            raise OAuthError("invalid_grant", "Invalid JWT Signature.")
        try:
            claims = jwt.decode(assertion, self.public_key, algorithms=["RS256"], options={
                "verify_signature": True, "verify_exp": False, "verify_nbf": False, "verify_iat": False,
                "verify_aud": False, "verify_iss": False})
        except jwt.PyJWTError:
            raise OAuthError("invalid_grant", "Invalid JWT Signature.")
        if claims.get("iss") != self.client_email:
            raise OAuthError("invalid_grant", "Invalid email or User ID")
        aud = claims.get("aud")
        if aud not in self.token_uris:
            right = self.token_uris[0] if self.token_uris else "?"
            raise OAuthError("invalid_grant", f"Invalid JWT: Failed audience check. The right audience is {right}")
        iat, exp = claims.get("iat"), claims.get("exp")
        now = time.time()
        timeframe = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                     "Check your iat and exp values in the JWT claim.")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (iat, exp)):
            raise OAuthError("invalid_grant", timeframe)
        if exp - iat > 3600 or exp <= iat or exp < now or iat > now + self.args.clock_skew:
            raise OAuthError("invalid_grant", timeframe)
        scope = claims.get("scope")
        if not isinstance(scope, str) or not scope.strip():
            raise OAuthError("invalid_scope", "Empty or missing scope not allowed.")
        if not SCOPES_OK & set(scope.split()):
            raise OAuthError("invalid_scope",
                             "The scope must include https://www.googleapis.com/auth/firebase.messaging")
        return self.issue_token("ya29.mock.", self.args.token_ttl)

    # ------------------------------------------------------------------ messages:send
    def handle_send(self, req, record):
        path = req.path.split("?", 1)[0]
        m = SEND_RE.match(path)
        if m is None or req.method != "POST":
            raise RpcError(404, "Requested entity was not found.")
        project = urllib.parse.unquote(m.group(1))
        record["project"] = project
        self.check_auth(req)
        if project != self.project:
            raise RpcError(403, f"Permission 'cloudmessaging.messages.create' denied on resource "
                                f"'//cloudresourcemanager.googleapis.com/projects/{project}' (or it may not exist).",
                           extra_details=[{"@type": ERROR_INFO, "reason": "IAM_PERMISSION_DENIED",
                                           "domain": "cloudresourcemanager.googleapis.com"}])
        try:
            body = json.loads(bytes(req.body) or b"null")
        except ValueError as e:
            raise invalid(f"Invalid JSON payload received. {e}")
        if not isinstance(body, dict):
            raise invalid("Invalid JSON payload received. Expected an object.")
        for k in body:
            if k not in ("message", "validate_only", "validateOnly"):
                raise invalid(f'Invalid JSON payload received. Unknown name "{k}": Cannot find field.')
        msg = body.get("message")
        validate_only = bool(body.get("validate_only", body.get("validateOnly", False)))
        record["validate_only"] = validate_only
        record["message"] = msg
        if not isinstance(msg, dict):
            raise invalid("Request contains an invalid argument.", "message")
        for k in msg:
            if k not in MESSAGE_FIELDS:
                raise invalid(f"Invalid JSON payload received. Unknown name \"{k}\" at 'message': Cannot find field.",
                              "message")
        targets = [k for k in ("token", "topic", "condition") if k in msg]
        if not targets:
            raise invalid("Recipient of the message is not set.", "message")
        if len(targets) > 1:
            raise invalid(f"Invalid JSON payload received. Oneof field 'target' is already set. "
                          f"Cannot set '{targets[1]}'", "message")
        target = targets[0]
        value = msg[target]
        record["target"] = target
        record[target] = value
        if not isinstance(value, str) or not value:
            raise invalid(f"Invalid value at 'message.{target}' (TYPE_STRING)", f"message.{target}")
        if target == "token" and not FCM_TOKEN_RE.match(value):
            raise invalid("The registration token is not a valid FCM registration token", "message.token")
        if target == "topic" and not TOPIC_RE.match(value[8:] if value.startswith("/topics/") else value):
            raise invalid("Invalid topic name.", "message.topic")
        size = self.check_data(msg.get("data"), "message.data")
        android = msg.get("android")
        if android is not None:
            size += self.check_android(android)
        limit = 2048 if target == "topic" else 4096
        if size > limit:
            raise invalid("Android message is too big", "message")
        if target == "token":
            self.scripted(value)
        if validate_only:
            return f"projects/{project}/messages/fake_message_id"
        return f"projects/{project}/messages/0:{int(time.time() * 1e6)}%{secrets.token_hex(8)}"

    def check_auth(self, req):
        auth = req.headers.get("authorization")
        www = [("www-authenticate", 'Bearer realm="https://accounts.google.com/"')]
        if not auth:
            raise RpcError(401, "Request is missing required authentication credential. Expected OAuth 2 access "
                                "token, login cookie or other valid authentication credential. See "
                                "https://developers.google.com/identity/sign-in/web/devconsole-project.",
                           extra_details=[{"@type": ERROR_INFO, "reason": "CREDENTIALS_MISSING",
                                           "domain": "googleapis.com"}], headers=www)
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        expiry = self.access_tokens.get(token) if scheme.lower() == "bearer" else None
        if expiry is None or expiry <= time.time():
            reason = "ACCESS_TOKEN_EXPIRED" if expiry is not None else "ACCESS_TOKEN_TYPE_UNSUPPORTED"
            raise RpcError(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                                "login cookie or other valid authentication credential. See "
                                "https://developers.google.com/identity/sign-in/web/devconsole-project.",
                           extra_details=[{"@type": ERROR_INFO, "reason": reason, "domain": "googleapis.com"}],
                           headers=[("www-authenticate",
                                     'Bearer realm="https://accounts.google.com/", error="invalid_token"')])

    @staticmethod
    def check_data(data, field):
        if data is None:
            return 0
        if not isinstance(data, dict):
            raise invalid(f"Invalid value at '{field}' (type.googleapis.com/google.protobuf.Struct)", field)
        size = 0
        for i, (k, v) in enumerate(data.items()):
            if not isinstance(v, str):
                raise invalid(f"Invalid value at '{field}[{i}].value' (TYPE_STRING), {json.dumps(v)}",
                              f"{field}[{i}].value")
            low = k.lower()
            if low in ("from", "message_type") or low.startswith("google") or low.startswith("gcm"):
                raise invalid(f"Invalid data payload key: {k}", field)
            size += len(k.encode()) + len(v.encode())
        return size

    def check_android(self, android):
        if not isinstance(android, dict):
            raise invalid("Invalid value at 'message.android'", "message.android")
        for k in android:
            if k not in ANDROID_FIELDS:
                raise invalid(f"Invalid JSON payload received. Unknown name \"{k}\" at 'message.android': "
                              f"Cannot find field.", "message.android")
        prio = android.get("priority")
        if prio is not None and (not isinstance(prio, str) or prio.upper() not in ("NORMAL", "HIGH")):
            raise invalid(f"Invalid value at 'message.android.priority' "
                          f"(type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), {json.dumps(prio)}",
                          "message.android.priority")
        ttl = android.get("ttl")
        if ttl is not None and (not isinstance(ttl, str) or not TTL_RE.match(ttl)):
            raise invalid(f"Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), "
                          f"{json.dumps(ttl)}", "message.android.ttl")
        for k in ("collapse_key", "collapseKey", "restricted_package_name", "restrictedPackageName"):
            if k in android and not isinstance(android[k], str):
                raise invalid(f"Invalid value at 'message.android.{k}' (TYPE_STRING)", f"message.android.{k}")
        if "notification" in android and not isinstance(android["notification"], dict):
            raise invalid("Invalid value at 'message.android.notification'", "message.android.notification")
        return self.check_data(android.get("data"), "message.android.data")

    @staticmethod
    def prefix_of(token):
        low = token[:12].lower()
        for p in PREFIXES:
            if low.startswith(p):
                return p
        return None

    def scripted(self, token):
        prefix = self.prefix_of(token)
        if prefix is None:
            return
        if prefix == "dead":
            raise RpcError(404, "Requested entity was not found.", "UNREGISTERED")
        if prefix == "mismatch":
            raise RpcError(403, "SenderId mismatch", "SENDER_ID_MISMATCH")
        if prefix == "invalid":
            raise invalid("The registration token is not a valid FCM registration token", "message.token")
        if prefix == "thirdparty":
            raise RpcError(401, "Auth error from APNS or Web Push Service", "THIRD_PARTY_AUTH_ERROR")
        counts = {"quota": self.args.quota_count, "unavailable": self.args.unavailable_count,
                  "internal": self.args.internal_count}
        n = self.token_attempts.get(token, 0) + 1
        self.token_attempts[token] = n
        if n > counts[prefix]:
            return
        retry = [("retry-after", str(self.args.retry_after))]
        if prefix == "quota":
            raise RpcError(429, QUOTA_MESSAGE, "QUOTA_EXCEEDED", headers=retry)
        if prefix == "unavailable":
            raise RpcError(503, UNAVAILABLE_MESSAGE, "UNAVAILABLE", headers=retry)
        raise RpcError(500, INTERNAL_MESSAGE, "INTERNAL")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Mock FCM HTTP v1 + OAuth2 token endpoint (HTTP/2 + TLS).")
    mocklib.add_common_args(p, default_streams=100)
    p.add_argument("--service-account", metavar="JSON",
                   help="service-account JSON: gives the public key, client_email, project_id, private_key_id "
                        "and (unless it is the PORT placeholder) token_uri")
    p.add_argument("--public-key", metavar="PEM", help="RSA public key (or private key) that signs the assertions")
    p.add_argument("--client-email", help="expected assertion iss")
    p.add_argument("--private-key-id", help="expected assertion kid (when the assertion has one)")
    p.add_argument("--project", help="project id accepted in /v1/projects/<project>/messages:send (default: the "
                                     "service account's, else herald-test)")
    p.add_argument("--token-uri", action="append", default=[],
                   help="accepted assertion aud (repeatable); its path is served as the token endpoint. "
                        "Default: https://127.0.0.1:<port>/token and https://localhost:<port>/token")
    p.add_argument("--token-ttl", type=int, default=3600, help="access-token lifetime, s (expires_in; default 3600)")
    p.add_argument("--clock-skew", type=float, default=300.0,
                   help="assertion iat may be this far in the future, s (default 300)")
    p.add_argument("--quota-count", type=int, default=1,
                   help="'quota...' tokens get 429 QUOTA_EXCEEDED this many times, then 200 (default 1)")
    p.add_argument("--unavailable-count", type=int, default=1,
                   help="'unavailable...' tokens get 503 UNAVAILABLE this many times, then 200 (default 1)")
    p.add_argument("--internal-count", type=int, default=1,
                   help="'internal...' tokens get 500 INTERNAL this many times, then 200 (default 1)")
    p.add_argument("--retry-after", type=int, default=1, help="Retry-After seconds on 429/503 (default 1)")
    return p.parse_args(argv)


def main():
    args = parse_args()
    mocklib.run(args, FcmApp, "fcm_mock")


if __name__ == "__main__":
    main()
