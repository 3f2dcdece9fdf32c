"""ktune.http — JSON over urllib, configured like the `ktune` command (service/cli/README.md).

The server comes from the argument, else KTUNE_SERVER, else http://127.0.0.1:8080 (ktuned's default
--listen); the token from the argument, else KTUNE_TOKEN, sent as `Authorization: Bearer T`; the
timeout (seconds per request) from the argument, else KTUNE_TIMEOUT, else 60."""
import json
import os
import socket
import urllib.error
import urllib.parse
import urllib.request

from .errors import KtuneError

DEFAULT_SERVER = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 60.0
MAX_REPLY = 64 << 20  # as the CLI: replies are capped at 64 MiB


def _server(url, origin):
    url = (url or "").rstrip("/")
    if not (url.startswith("http://") or url.startswith("https://")) or len(url) < 8 or len(url) > 511:
        raise ValueError("%s %r is not a server address like http://127.0.0.1:8080" % (origin, url))
    return url


class Connection:
    def __init__(self, server=None, token=None, timeout=None):
        if server is None:
            server, origin = os.environ.get("KTUNE_SERVER") or DEFAULT_SERVER, "KTUNE_SERVER"
        else:
            origin = "server"
        self.server = _server(server, origin)
        if token is None:
            token = os.environ.get("KTUNE_TOKEN") or None
        if token is not None and ("\r" in token or "\n" in token):
            raise ValueError("the token must be one line")
        self.token = token
        if timeout is None:
            env = os.environ.get("KTUNE_TIMEOUT")
            try:
                timeout = float(env) if env else DEFAULT_TIMEOUT
            except ValueError:
                raise ValueError("KTUNE_TIMEOUT must be seconds, not %r" % env) from None
        if not timeout > 0:
            raise ValueError("the timeout must be positive seconds")
        self.timeout = float(timeout)

    def call(self, method, path, body=None, query=None, timeout=None):
        """The reply's JSON for a 2xx; KtuneError for anything else."""
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                status, raw = r.status, r.read(MAX_REPLY + 1)
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read(MAX_REPLY + 1)
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise KtuneError(0, "unreachable", "cannot reach %s: %s" % (self.server, reason),
                             "is ktuned running there? Set server= or KTUNE_SERVER") from None
        if len(raw) > MAX_REPLY:
            raise KtuneError(status, "too_large", "the reply of %s %s is over 64 MiB" % (method, path))
        try:
            reply = json.loads(raw) if raw else None
        except ValueError:
            raise KtuneError(status, "not_json", "%s %s answered HTTP %d that is not JSON: %r"
                             % (method, path, status, raw[:200])) from None
        if 200 <= status < 300:
            return reply
        err = reply.get("error") if isinstance(reply, dict) else None
        if not isinstance(err, dict):
            raise KtuneError(status, "http_%d" % status, "%s %s answered HTTP %d" % (method, path, status))
        e = KtuneError(status, err.get("code", "http_%d" % status), err.get("message", ""), err.get("hint"))
        e.reply = reply
        raise e
