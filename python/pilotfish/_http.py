"""HTTP/1.1 to the jobs service with the standard library: one keep-alive connection per
thread for requests, a connection of its own for each stream. ``http://``, ``https://`` and
``unix:/path/to.sock`` (``pilotfish serve --socket``)."""

import http.client
import json
import socket
import ssl
import threading
import urllib.parse

from .errors import PilotfishError


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class Transport:
    """Requests with the token, answers as JSON, errors as PilotfishError."""

    def __init__(self, url, token, timeout=60.0, cafile=None):
        if url.startswith("unix:"):
            self._make = lambda t: _UnixConnection(url[len("unix:"):], t)
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError(f"url must be http://, https:// or unix:PATH, not {url!r}")
            port = u.port or (443 if u.scheme == "https" else 80)
            if u.scheme == "https":
                ctx = ssl.create_default_context(cafile=cafile)
                self._make = lambda t: http.client.HTTPSConnection(
                    u.hostname, port, timeout=t, context=ctx
                )
            else:
                self._make = lambda t: http.client.HTTPConnection(u.hostname, port, timeout=t)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        self._local = threading.local()

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._local.conn = self._make(self._timeout)
        return c

    def close(self):
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None

    def request(self, method, path, body=None, data=None, headers=None, timeout=None):
        """The answer's status, headers and bytes; raises PilotfishError for 4xx and 5xx."""
        h = dict(self._headers)
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            h["Content-Type"] = "application/json"
        elif data is not None:
            h["Content-Type"] = "application/octet-stream"
        if headers:
            h.update(headers)
        for tried in (0, 1):
            c = self._conn()
            reused = c.sock is not None
            c.timeout = timeout or self._timeout
            if reused:
                c.sock.settimeout(c.timeout)
            try:
                c.request(method, path, body=data, headers=h)
                r = c.getresponse()
                raw = r.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # a keep-alive connection the server closed while it was idle: the request
                # never reached it, so it goes again on a new connection (once)
                c.close()
                if not reused or tried == 1:
                    raise
            except BaseException:
                c.close()
                raise
        if r.getheader("Connection", "").lower() == "close":
            c.close()
        if r.status >= 400:
            raise _error(r.status, raw)
        return r.status, r, raw

    def json(self, method, path, body=None, timeout=None):
        _, _, raw = self.request(method, path, body=body, timeout=timeout)
        return json.loads(raw) if raw else None

    def stream(self, path, headers=None, timeout=None):
        """A response to read line by line, on a connection of its own (closed with it)."""
        c = self._make(timeout or self._timeout)
        h = dict(self._headers)
        if headers:
            h.update(headers)
        c.request("GET", path, headers=h)
        r = c.getresponse()
        if r.status >= 400:
            raw = r.read()
            c.close()
            raise _error(r.status, raw)
        return c, r


def _error(status, raw):
    try:
        e = json.loads(raw)["error"]
        return PilotfishError(e.get("code", f"E_HTTP_{status}"), e.get("message", ""), status, e.get("issues"))
    except (ValueError, KeyError, TypeError):
        text = raw.decode("utf-8", "replace")[:500]
        return PilotfishError(f"E_HTTP_{status}", text or f"HTTP {status}", status)
