"""Runs the remote functions of pilotfish's Python client (python/pilotfish/remote.py) in a
Python function worker (python_worker.py puts this folder last on sys.path, so a task names
this module `pilotfish_remote`). A call's spec names the function and its arguments, each a
cloudpickle blob inline (base64) or a file staged into the task's sandbox; the answer is the
pickled outcome inline, or a file in the sandbox that the client fetches
(GET /v1/tasks/{uid}/result/file) when it is too big to travel inline.
"""

import base64
import hashlib
import importlib
import os
import platform
import sys
import types

#: Outcomes up to this size travel inline (base64 in the result; the pool caps results at 1 MiB).
INLINE_MAX = 512 * 1024


def _cloudpickle():
    try:
        import cloudpickle
    except ImportError as e:
        raise ImportError(
            f"the workers' Python ({sys.executable}, {platform.python_version()}) has no "
            f"cloudpickle: {e}. Install it (Debian: python3-cloudpickle, or pip install "
            "cloudpickle) or give the pilot agent.python an interpreter that has it"
        ) from None
    return cloudpickle


def _paths():
    """The call's PYTHONPATH on sys.path (kept, as the worker keeps a module's): the worker reads
    it when it imports a module, and this module is imported once for every remote call."""
    added = False
    for entry in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        if entry and os.path.isabs(entry) and entry not in sys.path:
            sys.path.insert(1, entry)
            added = True
    if added:
        importlib.invalidate_caches()


def _blob(ref):
    if "b64" in ref:
        data = base64.b64decode(ref["b64"])
    else:
        path = os.path.join(os.environ["PF_TASK_SANDBOX"], ref["file"])
        with open(path, "rb") as f:
            data = f.read()
    if hashlib.sha256(data).hexdigest() != ref["sha256"]:
        raise ValueError(f"a payload of {len(data)} bytes does not match its sha256 {ref['sha256']}")
    return data


def _moved(value, device, seen=None):
    """``value`` with every object that has a ``.to(device)`` moved, inside lists, tuples and
    dicts too."""
    to = getattr(value, "to", None)
    if callable(to) and not isinstance(value, type):
        return to(device)
    if isinstance(value, list):
        return [_moved(v, device) for v in value]
    if isinstance(value, tuple):
        return type(value)(*(_moved(v, device) for v in value)) if hasattr(value, "_fields") else tuple(
            _moved(v, device) for v in value
        )
    if isinstance(value, dict):
        return {k: _moved(v, device) for k, v in value.items()}
    return value


def _names(code, out):
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _names(c, out)
    return out


def _state(fn, cp):
    """The pickled value of each global the function names and of each closure cell."""
    g = {}
    for name in _names(fn.__code__, set()):
        if name in fn.__globals__:
            v = fn.__globals__[name]
            if isinstance(v, (types.ModuleType, types.FunctionType, type)):
                continue
            try:
                g[name] = cp.dumps(v)
            except Exception:
                continue  # what cannot be pickled cannot be synced
    cells = {}
    for i, cell in enumerate(fn.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            continue  # an empty cell
        if isinstance(v, (types.ModuleType, types.FunctionType, type)):
            continue
        try:
            cells[i] = cp.dumps(v)
        except Exception:
            continue
    return g, cells


def call(spec):
    _paths()
    cp = _cloudpickle()
    fn = cp.loads(_blob(spec["fn"]))
    args, kwargs = cp.loads(_blob(spec["args"]))
    device = spec.get("device")
    if device:
        args, kwargs = _moved(args, device), _moved(kwargs, device)
    sync = spec.get("sync", False)
    before = _state(fn, cp) if sync else None
    value = fn(*args, **kwargs)
    if device:
        value = _moved(value, spec.get("back", "cpu"))
    out = {"value": value}
    if sync:
        after = _state(fn, cp)
        out["globals"] = {k: cp.loads(v) for k, v in after[0].items() if before[0].get(k) != v}
        out["cells"] = {i: cp.loads(v) for i, v in after[1].items() if before[1].get(i) != v}
    data = cp.dumps(out)
    digest = hashlib.sha256(data).hexdigest()
    if len(data) <= INLINE_MAX:
        return {"b64": base64.b64encode(data).decode("ascii"), "sha256": digest}
    # too big to travel inline: a file in the sandbox, where the service reads it
    d = os.path.join(os.environ["PF_TASK_SANDBOX"], ".pf-results")
    os.makedirs(d, mode=0o700, exist_ok=True)
    name = f"{os.environ['PF_TASK_ID']}.{os.environ.get('PF_TASK_ATTEMPT', '1')}.bin"
    part = os.path.join(d, f".{name}.{os.getpid()}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(part, os.path.join(d, name))
    return {"file": True, "bytes": len(data), "sha256": digest}


def preflight(libraries):
    """What the client compares with its own before any call: the Python, cloudpickle and the
    versions of ``libraries`` (None: not importable here)."""
    _paths()
    try:
        import cloudpickle

        cp_version = cloudpickle.__version__
    except ImportError:
        cp_version = None
    found = {}
    for name in libraries:
        try:
            m = importlib.import_module(name)
            found[name] = str(getattr(m, "__version__", "unknown"))
        except Exception:
            found[name] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "cloudpickle": cp_version,
        "libraries": found,
    }
