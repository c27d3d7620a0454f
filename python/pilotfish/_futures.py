"""Futures of tasks, followed by long polls (POST /v1/tasks/wait): one request answers every
task of a batch that ended meanwhile, so thousands of calls cost a few requests a second."""

import concurrent.futures as cf
import http.client
import queue
import threading
import time

from .errors import PilotfishError, TaskCanceled, TaskFailed

#: How long one poll may wait on the service, and how many batches are followed at once.
POLL_S = 20
MAX_FOLLOWERS = 32
BATCH = 10_000


class TaskFuture(cf.Future):
    """A concurrent.futures.Future of one task: its result once DONE, TaskFailed (or
    TaskCanceled) with the reason once it ends otherwise. ``uid`` names the task; ``summary``
    is what the service said of it when it ended."""

    def __init__(self, uid, client, transform=None):
        super().__init__()
        self.uid = uid
        self.summary = None
        self._client = client
        self._transform = transform
        self.set_running_or_notify_cancel()

    def cancel(self):
        """Cancels the task on its pilot; the future ends when the task does (TaskCanceled,
        or its result if it ended first). True if the service took the cancel."""
        if self.done():
            return False
        try:
            self._client.cancel(self.uid)
            return True
        except PilotfishError:
            return False

    def _settle(self, summary):
        self.summary = summary
        state = summary["state"]
        try:
            if state == "DONE":
                value = summary.get("result")
                if self._transform is not None:
                    value = self._transform(self, value)
                self.set_result(value)
            elif state == "CANCELED":
                self.set_exception(TaskCanceled(self.uid, state, summary.get("reason")))
            else:
                self.set_exception(TaskFailed(self.uid, state, summary.get("reason")))
        except BaseException as e:  # a result that could not be read back
            if not self.done():
                self.set_exception(e)


class Follower:
    """Follows batches of futures on a few daemon threads (none left behind at exit)."""

    def __init__(self, client):
        self._client = client
        self._jobs = queue.Queue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._closed = False

    def follow(self, uids, transform=None):
        futures = [TaskFuture(u, self._client, transform) for u in uids]
        for i in range(0, len(futures), BATCH):
            self._put(futures[i : i + BATCH])
        return futures

    def close(self):
        self._closed = True

    def _put(self, batch):
        with self._lock:
            self._jobs.put(batch)
            if self._idle == 0 and self._threads < MAX_FOLLOWERS:
                self._threads += 1
                threading.Thread(target=self._run, name="pilotfish-follower", daemon=True).start()

    def _run(self):
        while not self._closed:
            with self._lock:
                self._idle += 1
            try:
                batch = self._jobs.get(timeout=5)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._jobs.empty():
                        self._threads -= 1
                        self._client._http.close()  # this thread's connection
                        return
                continue
            with self._lock:
                self._idle -= 1
            self._follow(batch)
        with self._lock:
            self._threads -= 1
        self._client._http.close()

    def _follow(self, batch):
        pending = {}
        for f in batch:
            pending.setdefault(f.uid, []).append(f)
        backoff = 0.05
        while pending and not self._closed:
            try:
                answer = self._client._http.json(
                    "POST",
                    "/v1/tasks/wait",
                    {"uids": list(pending), "any": True, "timeoutS": POLL_S},
                    timeout=POLL_S + 30,
                )
                backoff = 0.05
            except PilotfishError as e:
                if e.status is not None and 400 <= e.status < 500 and e.status != 429:
                    for fs in pending.values():
                        for f in fs:
                            f.set_exception(e)
                    return
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            except (OSError, http.client.HTTPException):
                time.sleep(backoff)  # the service away (a restart): again, later each time
                backoff = min(backoff * 2, 5.0)
                continue
            for t in answer["tasks"]:
                for f in pending.pop(t["uid"], ()):
                    f._settle(t)
