"""Remote functions: a function (a notebook's, with its closure) run on the pilot's warm
Python workers, shipped by value with cloudpickle, its arguments and result inline when small
and by file when not (docs/python.md)."""

import base64
import functools
import hashlib
import json
import platform
import sys
import threading

from .errors import PilotfishError, TaskFailed, VersionMismatch

#: Payloads up to this size travel inside the task; bigger ones by file.
INLINE_MAX = 256 * 1024
#: Calls one request submits (a sweep goes in several: the first run while the rest go).
SUBMIT_CHUNK = 1_000
#: The module of the workers' side (workers/pilotfish_remote.py in the npm package).
RUNNER = "pilotfish_remote"


def _cloudpickle():
    try:
        import cloudpickle
    except ImportError as e:
        raise ImportError(
            "remote functions need cloudpickle here (Debian: apt-get install "
            f"python3-cloudpickle; or pip install cloudpickle): {e}"
        ) from None
    return cloudpickle


def _version(name):
    import importlib

    try:
        return str(getattr(importlib.import_module(name), "__version__", "unknown"))
    except Exception:
        return None


def check_versions(here, there):
    """The mismatches between this side's versions and the workers' (both as preflight
    returns them), as sentences naming both."""
    out = []
    mine, theirs = here["python"], there["python"]
    if mine.split(".")[:2] != theirs.split(".")[:2] or here["implementation"] != there["implementation"]:
        out.append(
            f"Python {here['implementation']} {mine} here, {there['implementation']} {theirs} "
            f"on the workers ({there.get('executable', '?')})"
        )
    if there["cloudpickle"] is None:
        out.append(f"cloudpickle {here['cloudpickle']} here, none on the workers")
    elif here["cloudpickle"] != there["cloudpickle"]:
        out.append(f"cloudpickle {here['cloudpickle']} here, {there['cloudpickle']} on the workers")
    for name, v in sorted(here["libraries"].items()):
        w = there["libraries"].get(name)
        if v != w:
            out.append(f"{name} {v or 'not installed'} here, {w or 'not installed'} on the workers")
    return out


def local_versions(libraries):
    cp = _cloudpickle()
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "cloudpickle": cp.__version__,
        "libraries": {n: _version(n) for n in libraries},
    }


class RemoteFunction:
    """``f(*args)`` runs ``fn`` remotely and returns its result; ``f.submit(*args)`` a
    future of it; ``f.map(xs, ys, ...)`` one call per element, submitted together, results in
    order. Options: ``cores``, ``gpus`` (per call), ``timeout`` (s), ``retries``, ``priority``,
    ``pilot``; ``sync=True`` brings back the globals and closure cells the function changed;
    ``device='cuda'`` moves arguments with ``.to`` there and results back to the CPU;
    ``check=('numpy', ...)`` libraries whose versions must agree with the workers';
    ``shared_files=False`` sends big payloads over the pilot's connection instead of through
    the service's directory."""

    def __init__(self, client, fn, *, cores=1, gpus=0, timeout=None, retries=0, priority=None,
                 pilot=None, sync=False, device=None, check=(), shared_files=True,
                 preflight=True, environment=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._client = client
        self._sync = sync
        self._device = device
        self._check = tuple(check)
        self._staging = "link" if shared_files else "transfer"
        self._preflight = preflight
        d = {"coresPerRank": cores}
        if gpus:
            d["gpusPerRank"] = gpus
        if timeout is not None:
            d["timeoutS"] = timeout
        if retries:
            d["retries"] = retries
        if priority is not None:
            d["priority"] = priority
        if pilot is not None:
            d["pilot"] = pilot
        if environment:
            d["environment"] = dict(environment)
        self._description = d

    def __call__(self, *args, **kwargs):
        return self.submit(*args, **kwargs).result()

    def submit(self, *args, **kwargs):
        return self._submit([(args, kwargs)])[0]

    def map(self, *iterables, timeout=None):
        """The results of one call per element (of zipped iterables), in order; the first
        failure raises its TaskFailed."""
        return [f.result(timeout) for f in self.map_futures(*iterables)]

    def map_futures(self, *iterables):
        return self._submit([(a, {}) for a in zip(*iterables)])

    # ----

    def _submit(self, calls):
        cp = _cloudpickle()
        if self._preflight:
            where = {k: v for k, v in self._description.items() if k in ("environment", "pilot")}
            preflight(self._client, self._check, where)
        fn_ref, fn_staging = self._ref(cp.dumps(self.fn))
        name = getattr(self.fn, "__qualname__", "remote")
        tasks = []
        for args, kwargs in calls:
            a_ref, a_staging = self._ref(cp.dumps((args, kwargs)))
            spec = {"fn": fn_ref, "args": a_ref, "sync": self._sync}
            if self._device:
                spec["device"] = self._device
            t = {
                **self._description,
                "name": name[:200],
                "mode": "function",
                "function": {"language": "python", "module": RUNNER, "export": "call", "args": [spec]},
            }
            staging = fn_staging + a_staging
            if staging:
                t["inputStaging"] = staging
            tasks.append(t)
        # in chunks, each followed once it is in: the first calls run while the rest go
        futures = []
        for i in range(0, len(tasks), SUBMIT_CHUNK):
            made = self._client.submit(tasks[i : i + SUBMIT_CHUNK])
            futures += self._client._follower.follow([m["uid"] for m in made], transform=self._outcome)
        return futures

    def _ref(self, blob):
        digest = hashlib.sha256(blob).hexdigest()
        if len(blob) <= INLINE_MAX:
            return {"b64": base64.b64encode(blob).decode("ascii"), "sha256": digest}, []
        path = f"pf-remote/{digest}"
        uploaded = self._client._uploaded
        if digest not in uploaded:
            if not self._client.has_file(path):
                self._client.upload(path, blob)
            uploaded.add(digest)
        target = f".pf-args/{digest}"
        directive = {"source": f"client://{path}", "target": f"task://{target}", "action": self._staging}
        return {"file": target, "sha256": digest, "bytes": len(blob)}, [directive]

    def _outcome(self, future, answer):
        cp = _cloudpickle()
        if not isinstance(answer, dict) or "sha256" not in answer:
            raise PilotfishError("E_REMOTE_RESULT", f"task {future.uid} answered {answer!r}")
        if answer.get("file"):
            data = self._client.result_file(future.uid)
        else:
            data = base64.b64decode(answer["b64"])
        if hashlib.sha256(data).hexdigest() != answer["sha256"]:
            raise PilotfishError(
                "E_REMOTE_RESULT", f"the result of task {future.uid} ({len(data)} bytes) does not match its sha256"
            )
        out = cp.loads(data)
        if self._sync:
            self.fn.__globals__.update(out.get("globals", {}))
            for i, v in out.get("cells", {}).items():
                self.fn.__closure__[i].cell_contents = v
        return out["value"]


_preflight_lock = threading.Lock()


def preflight(client, libraries=(), where=None):
    """Compares this side's Python, cloudpickle and ``libraries`` with a worker's (in the
    environment and on the pilot ``where`` names, as the calls will run), once per client, set
    of libraries and place; raises VersionMismatch naming both versions of each that differs
    (before any call runs)."""
    where = where or {}
    libs = tuple(sorted(set(libraries)))
    key = (libs, json.dumps(where, sort_keys=True))
    done = client._preflights
    with _preflight_lock:
        if key in done:
            if isinstance(done[key], Exception):
                raise done[key]
            return done[key]
        here = local_versions(libs)
        future = client.call(RUNNER, "preflight", list(libs), **where)
        try:
            there = future.result(timeout=300)
        except TaskFailed as e:
            raise PilotfishError(
                "E_WORKER_ENV", f"the workers could not tell their versions: {e.message}"
            ) from e
        bad = check_versions(here, there)
        done[key] = VersionMismatch(bad) if bad else there
        if bad:
            raise done[key]
        return there


def remote(client, fn=None, **options):
    """``@remote(client, cores=..., ...)``: the same as ``@client.remote(...)``."""
    return client.remote(fn, **options)
