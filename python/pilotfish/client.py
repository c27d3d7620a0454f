"""The client of a pilotfish jobs service (``pilotfish serve``): tasks and pilots, their
states, output and results, over its HTTP API, with the standard library only."""

import concurrent.futures as cf
import json
import os
import urllib.parse
from collections import namedtuple

from . import _sse
from ._futures import Follower, TaskFuture
from ._http import Transport
from .errors import PilotfishError, TaskFailed

#: The most tasks one submit or one wait takes (the service's limit).
BATCH = 10_000
FINAL = ("DONE", "FAILED", "CANCELED")

#: One notification of the session's store: ``id`` its place (resume from it), ``kind``
#: 'task' or 'pilot', ``data`` the notification (uid, attempt, state, ts, ...).
Event = namedtuple("Event", "id kind data")


def _q(value):
    return urllib.parse.quote(str(value), safe="")


class Client:
    """A connection to one jobs service.

    ``Client(url, token)``; ``url`` defaults to ``$PILOTFISH_URL``, ``token`` to
    ``$PILOTFISH_TOKEN``. ``Client.from_dir(dir)`` reads both from the service's directory.
    """

    def __init__(self, url=None, token=None, *, timeout=60.0, cafile=None):
        url = url or os.environ.get("PILOTFISH_URL")
        token = token or os.environ.get("PILOTFISH_TOKEN")
        if not url:
            raise ValueError("no url: give Client(url, token) or set PILOTFISH_URL")
        self.url = url.rstrip("/")
        self._http = Transport(self.url, token, timeout=timeout, cafile=cafile)
        self._follower = Follower(self)
        self._preflights = {}  # what remote.preflight found, per libraries and place
        self._uploaded = set()  # sha256 of payloads the service's files directory has

    @classmethod
    def from_dir(cls, directory, token_file="admin.token", **kw):
        """The service that runs on ``directory`` (its serve.json), with its admin token."""
        with open(os.path.join(directory, "serve.json")) as f:
            url = json.load(f)["url"]
        with open(os.path.join(directory, token_file)) as f:
            token = f.read().strip()
        return cls(url, token, **kw)

    def close(self):
        self._follower.close()
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- tasks

    def submit(self, tasks):
        """Submits task descriptions (dicts, as docs/guide.md has them): their summaries (uid,
        state), in order. Batches of more than 10,000 go in several requests; a task with a
        uid the session has is not submitted again (the same description) or refused (409)."""
        tasks = list(tasks)
        out = []
        for i in range(0, len(tasks), BATCH):
            out += self._http.json("POST", "/v1/tasks", {"tasks": tasks[i : i + BATCH]})["tasks"]
        return out

    def task(self, uid):
        """One task: state, history, reason, result, and what it waits for."""
        return self._http.json("GET", f"/v1/tasks/{_q(uid)}")

    def tasks(self, state=None, name=None, pilot=None, labels=None, page=1000):
        """The session's tasks in submission order (summaries), filtered, page by page."""
        q = [("limit", str(page))]
        if state:
            q.append(("state", state if isinstance(state, str) else ",".join(state)))
        if name:
            q.append(("name", name))
        if pilot:
            q.append(("pilot", pilot))
        for k, v in (labels or {}).items():
            q.append(("label", f"{k}={v}"))
        after = None
        while True:
            qs = q + ([("after", after)] if after else [])
            page_ = self._http.json("GET", "/v1/tasks?" + urllib.parse.urlencode(qs))
            yield from page_["tasks"]
            after = page_.get("next")
            if not after:
                return

    def wait(self, uids, timeout=None, raise_on_failure=False):
        """Waits until the tasks are final: {uid: summary (with ``result``)}. Raises
        TimeoutError after ``timeout`` seconds, and with ``raise_on_failure`` TaskFailed for the
        first that did not end DONE."""
        uids = [u["uid"] if isinstance(u, dict) else u for u in uids]
        futures = self._follower.follow(uids)
        done = {}
        try:
            for f in cf.as_completed(futures, timeout=timeout):
                if f.summary is None:  # not followed to its end: the service refused the wait
                    raise f.exception()
                done[f.uid] = f.summary
                if raise_on_failure and f.summary["state"] != "DONE":
                    raise f.exception()
        except cf.TimeoutError:
            left = len(uids) - len(done)
            raise TimeoutError(f"{left} of {len(uids)} tasks not final after {timeout} s") from None
        return {u: done[u] for u in uids}

    def cancel(self, uids):
        """Cancels tasks: for each, whether it was canceled or had ended already."""
        if isinstance(uids, str):
            uids = [uids]
        return [self._http.json("POST", f"/v1/tasks/{_q(u)}/cancel") for u in uids]

    def result(self, uid):
        """A DONE function call's result (409 E_NOT_DONE before)."""
        return self._http.json("GET", f"/v1/tasks/{_q(uid)}/result")["result"]

    def delete(self, uid, purge=False):
        self._http.request("DELETE", f"/v1/tasks/{_q(uid)}" + ("?purge=true" if purge else ""))

    def call(self, module, export, *args, language="python", **description):
        """Submits one function call: a concurrent.futures.Future of its result."""
        return self.call_many(module, export, [args], language=language, **description)[0]

    def call_many(self, module, export, arg_lists, language="python", **description):
        """Submits one call per argument list, in one request: their futures, in order."""
        tasks = [
            {
                **description,
                "mode": "function",
                "function": {"language": language, "module": module, "export": export, "args": list(a)},
            }
            for a in arg_lists
        ]
        return self.futures(self.submit(tasks))

    def futures(self, tasks):
        """Futures of tasks (summaries or uids): each resolves with the result when the task is
        DONE, or raises TaskFailed (TaskCanceled) with its reason."""
        return self._follower.follow([t["uid"] if isinstance(t, dict) else t for t in tasks])

    # ---- streams

    def events(self, after=None, reconnect=True):
        """Every notification of the session from the one after ``after`` (an Event's id; None:
        from the first), as Events, without end; a cut connection (or a restart of the service)
        is reconnected from the last id seen: nothing missed, nothing twice."""

        def open_stream(last):
            h = {"Last-Event-ID": str(last)} if last is not None else {}
            return self._http.stream("/v1/events", headers=h)

        def handle(ev_id, ev_type, data):
            if ev_id is None:
                return None
            return Event(int(ev_id), ev_type, json.loads(data))

        start = None if after is None else str(after)
        return _sse.resuming(open_stream, handle, start, retry=reconnect)

    def output(self, uid, stream="stdout", follow=False, offset=0, reconnect=True):
        """A task's output: with ``follow``, an iterator of chunks (whole lines) as they are
        written, until the task ends, resumed at the next byte after a cut; without, the text
        so far from byte ``offset``."""
        path = f"/v1/tasks/{_q(uid)}/output?stream={stream}"
        if not follow:
            _, _, raw = self._http.request("GET", f"{path}&offset={int(offset)}")
            return raw.decode("utf-8", "replace")

        def open_stream(last):
            h = {"Last-Event-ID": str(last)} if last is not None else {}
            return self._http.stream(f"{path}&follow=true&offset={int(offset)}", headers=h)

        def handle(ev_id, ev_type, data):
            if ev_type == "output":
                return json.loads(data)
            if ev_type == "end":
                raise _sse.End()
            if ev_type == "error":
                raise PilotfishError("E_OUTPUT", json.loads(data))
            return None

        return _sse.resuming(open_stream, handle, None, retry=reconnect)

    # ---- pilots, the session

    def submit_pilots(self, pilots):
        """Submits pilot descriptions (an admin token): their views."""
        return self._http.json("POST", "/v1/pilots", {"pilots": list(pilots)})["pilots"]

    def pilots(self):
        return self._http.json("GET", "/v1/pilots")["pilots"]

    def cancel_pilot(self, uid):
        return self._http.json("POST", f"/v1/pilots/{_q(uid)}/cancel")

    def status(self):
        """The session now, as ``pilotfish status --json`` prints it."""
        return self._http.json("GET", "/v1/status")

    # ---- files

    def upload(self, path, data):
        """Puts bytes into the service's files directory (tasks stage ``client://<path>``)."""
        _, _, raw = self._http.request("PUT", f"/v1/files/{urllib.parse.quote(path)}", data=data)
        return json.loads(raw)

    def has_file(self, path):
        try:
            self._http.request("HEAD", f"/v1/files/{urllib.parse.quote(path)}")
            return True
        except PilotfishError as e:
            if e.status == 404:
                return False
            raise

    def result_file(self, uid):
        """The bytes of the result file a call left (a result too big to travel inline)."""
        _, _, raw = self._http.request("GET", f"/v1/tasks/{_q(uid)}/result/file", timeout=600)
        return raw

    # ---- remote functions

    def remote(self, fn=None, **options):
        """``@client.remote`` or ``@client.remote(cores=2, gpus=1, timeout=60, retries=1,
        sync=False, device=None, check=())``: the function, run on the pilot's Python workers
        with its closure (docs/python.md)."""
        from .remote import RemoteFunction

        if fn is not None:
            return RemoteFunction(self, fn, **options)
        return lambda f: RemoteFunction(self, f, **options)


__all__ = ["Client", "Event", "TaskFuture", "TaskFailed", "FINAL"]
