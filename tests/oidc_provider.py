"""A real OpenID Connect provider on loopback for the single sign-on tests: discovery, authorize, token,
userinfo and JWKS over HTTP, ID tokens signed with a real RSA key (joserfc, not the PyJWT that the app
verifies with), single-use codes bound to their client, redirect URI and PKCE challenge. ``mode`` makes
it misbehave the way a wrong or hostile provider would.

It signs in whoever ``account`` says, without a page of its own: the browser passes through its
authorization endpoint and is sent straight back, as with a provider session already open.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import RSAKey

MODES = (
    "ok",
    "wrong_audience",  # the ID token is for another client
    "bad_signature",  # signed by a key that is not the published one (same kid)
    "expired",  # the ID token expired ten minutes ago
    "other_issuer",  # the ID token names another issuer
    "wrong_nonce",  # the ID token carries another sign-in's nonce
    "wrong_state",  # the browser is sent back with another state
    "replayed_code",  # the authorization endpoint hands out the code redeemed last
    "denied",  # the person (or the provider's policy) says no: error=access_denied
)


@dataclass
class Account:
    sub: str = "248289761001"
    email: str = "ada@example.com"
    email_verified: bool = True
    preferred_username: str = "ada"
    given_name: str = "Ada"
    family_name: str = "Lovelace"
    groups: list[str] = field(default_factory=list)


class OidcProvider:
    def __init__(self, client_id: str = "contextforge", client_secret: str = "s3cret-for-tests") -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.key = RSAKey.generate_key(2048, parameters={"kid": "main", "alg": "RS256", "use": "sig"})
        self.rogue_key = RSAKey.generate_key(2048, parameters={"kid": "main", "alg": "RS256", "use": "sig"})
        self.redirect_uris: set[str] = set()
        self.reset()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reset(self) -> None:
        self.mode = "ok"
        self.account = Account()
        self.codes: dict[str, dict] = {}
        self.access_tokens: dict[str, Account] = {}
        self.last_redeemed: str | None = None
        self.token_requests = 0

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    # ----- what the endpoints answer --------------------------------------------------------------

    def discovery(self) -> dict:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        }

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], str]:
        if query.get("client_id") != self.client_id or query.get("redirect_uri") not in self.redirect_uris:
            return 400, {}, "unknown client or redirect_uri"
        if query.get("response_type") != "code" or "openid" not in query.get("scope", "").split():
            return 400, {}, "unsupported request"
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return 400, {}, "PKCE (S256) required"
        if self.mode == "denied":
            answer = {"error": "access_denied", "state": query.get("state", "")}
            return 302, {"Location": f"{query['redirect_uri']}?{urlencode(answer)}"}, ""
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "redirect_uri": query["redirect_uri"],
            "nonce": query.get("nonce"),
            "challenge": query["code_challenge"],
            "account": Account(**asdict(self.account)),
            "used": False,
        }
        if self.mode == "replayed_code" and self.last_redeemed:
            code = self.last_redeemed
        state = secrets.token_urlsafe(16) if self.mode == "wrong_state" else query.get("state", "")
        location = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': state})}"
        return 302, {"Location": location}, ""

    def token(self, form: dict[str, str], basic: tuple[str, str] | None) -> tuple[int, dict]:
        self.token_requests += 1
        client = basic or (form.get("client_id"), form.get("client_secret"))
        if client != (self.client_id, self.client_secret):
            return 401, {"error": "invalid_client"}
        grant = self.codes.get(form.get("code", ""))
        if form.get("grant_type") != "authorization_code" or grant is None or grant["used"]:
            return 400, {"error": "invalid_grant"}
        grant["used"] = True
        self.last_redeemed = form["code"]
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if form.get("redirect_uri") != grant["redirect_uri"] or challenge != grant["challenge"]:
            return 400, {"error": "invalid_grant"}
        account: Account = grant["account"]
        access_token = secrets.token_urlsafe(24)
        self.access_tokens[access_token] = account
        return 200, {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": self.id_token(account, grant["nonce"]),
        }

    def id_token(self, account: Account, nonce: str | None) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": account.sub,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "email": account.email,
            "email_verified": account.email_verified,
        }
        if self.mode == "wrong_audience":
            claims["aud"] = "another-application"
        elif self.mode == "expired":
            claims["iat"], claims["exp"] = now - 900, now - 600
        elif self.mode == "other_issuer":
            claims["iss"] = "https://identity.example.net"
        elif self.mode == "wrong_nonce":
            claims["nonce"] = secrets.token_urlsafe(16)
        key = self.rogue_key if self.mode == "bad_signature" else self.key
        return jwt.encode({"alg": "RS256", "kid": "main", "typ": "JWT"}, claims, key)

    def userinfo(self, authorization: str) -> tuple[int, dict]:
        account = self.access_tokens.get(authorization.removeprefix("Bearer "))
        if account is None:
            return 401, {"error": "invalid_token"}
        return 200, asdict(account)

    def jwks(self) -> dict:
        return {"keys": [self.key.as_dict(private=False)]}

    # ----- HTTP ------------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args) -> None:  # quiet
                pass

            def _send(self, status: int, body: dict | str, headers: dict[str, str] | None = None) -> None:
                data = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(status)
                content_type = "application/json" if isinstance(body, dict) else "text/plain"
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {name: values[0] for name, values in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._send(200, provider.discovery())
                elif url.path == "/authorize":
                    status, headers, text = provider.authorize(query)
                    self._send(status, text, headers)
                elif url.path == "/userinfo":
                    self._send(*provider.userinfo(self.headers.get("Authorization", "")))
                elif url.path == "/jwks":
                    self._send(200, provider.jwks())
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:
                if urlsplit(self.path).path != "/token":
                    self._send(404, {"error": "not_found"})
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                form = {name: values[0] for name, values in parse_qs(body).items()}
                basic = None
                authorization = self.headers.get("Authorization", "")
                if authorization.startswith("Basic "):
                    user, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
                    basic = (user, password)
                self._send(*provider.token(form, basic))

        return Handler
