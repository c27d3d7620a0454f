"""What the client's tests share: the service they run against (started by the project's
test command: test/integration/python/python-client.test.ts), and a TCP proxy whose
connections a test can cut, to see a stream resume."""

import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pilotfish import Client  # noqa: E402


def client(**kw):
    url = os.environ.get("PILOTFISH_URL")
    if not url:
        raise unittest.SkipTest("PILOTFISH_URL is not set: run through the project's test command")
    return Client(url, os.environ["PILOTFISH_TOKEN"], **kw)


def unique(prefix):
    return f"{prefix}-{os.getpid()}-{threading.get_ident() % 100000}-{os.urandom(3).hex()}"


class CuttingProxy:
    """Forwards 127.0.0.1:<port> to the service; ``cut()`` closes every open connection (as a
    network that drops them would), new ones are still forwarded."""

    def __init__(self, target_url):
        host, port = target_url.split("//", 1)[1].rsplit(":", 1)
        self._target = (host, int(port))
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._open = []
        self.cuts = 0
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self._server.accept()
            except OSError:
                return
            b = socket.create_connection(self._target)
            with self._lock:
                self._open += [a, b]
                self.accepted += 1
            for src, dst in ((a, b), (b, a)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        with self._lock:
            socks, self._open = self._open, []
            self.cuts += 1
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self._server.close()
        self.cut()
