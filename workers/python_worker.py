"""The Python function worker of pilotfish: a warm process that runs function tasks of
`language: 'python'` for a FunctionPool, in the protocol of docs/function-workers.md (the Node
worker, src/components/executor/functions/worker/main.ts, is the reference). Requests on fd 3,
replies on fd 4, both frames of a 4-byte big-endian length and one msgpack map; what a call
prints while it runs goes with its result when init asks for it (maxOutputBytes), else (and what
is printed between calls) to fds 1 and 2 (the pool's log files), never to 3 and 4.

Calls run one at a time, in the order received. A sync function runs outside the asyncio loop
(it may call asyncio.run itself); a coroutine runs in the worker's loop, which meanwhile still
reads fd 3, so a cancel cancels it and is answered at once. A function that never returns
cannot see a cancel: the pool kills the worker. A module is imported once per worker and kept,
or its import error is kept (phase 'import'). A call's environment and cwd come as changes to
the previous call's (protocol 2); they are set in os.environ and made the working directory
before its module is looked up, the next call changes only what differs, and between calls they
stay as the last call left them. os.environ notes its own changes (a subclass) and os.chdir is
wrapped, so a function that changes either is seen: the next call sets all of its own again.

Run as `python3 -u python_worker.py`; it needs the `msgpack` package and nothing else.
"""

import sys

try:
    import msgpack
except ImportError as _e:
    sys.stderr.write(
        "pilotfish function worker: the Python package 'msgpack' cannot be imported by "
        f"{sys.executable} (Python {sys.version.split()[0]}): {_e}. Install it "
        "('pip install msgpack', or 'apt-get install python3-msgpack' for the system's "
        "python3), or name an interpreter that has it in the pilot's agent.python\n"
    )
    sys.exit(70)

# Everything the worker uses is imported before '' (the call's directory) is on sys.path, so
# a user's file named like a standard module cannot replace it.
import asyncio
import collections
import datetime
import errno
import importlib
import importlib.util
import inspect
import os
import platform
import threading
import traceback

PROTOCOL_VERSION = 2
MAX_ERROR_TEXT = 16 * 1024
REPLY_FRAME_TARGET_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 512
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1
NIL = b"\xc0"  # the msgpack encoding of None

# Modules are found from the call's working directory (it is the cwd while the call runs), not
# from this script's folder.
sys.path[0] = ""
# ... and, last of all (a user's module of the same name wins), the modules shipped beside this
# worker: pilotfish_remote, which runs the Python client's remote functions.
sys.path.append(os.path.dirname(os.path.abspath(__file__)))

max_result_bytes = 1024 * 1024
max_output_bytes = 0  # what one call may print, kept for it (init); 0: it goes to the log files
home_dir = os.getcwd()

# module key -> ('ok', module) or ('error', wire error)
modules = {}
queue = collections.deque()
waiting = set()  # ids queued and not started
dropped = set()  # ids canceled while waiting
current = None  # the call whose coroutine runs now: {'id', 'task', 'waiter', 'abandoned'}
outbox = []
idle = False  # the loop runs only to wait for requests
call_env = {}  # the calls' environment over the worker's own, as the changes sent make it
call_dir = home_dir
changed = []  # keys of call_env changed since os.environ last held it
MAX_CHANGED = 64  # beyond this many, setting all of call_env again is cheaper
saved_env = {}  # the worker's own value of each variable a call set (None: it had none)
cwd_now = home_dir  # the directory the last enter() made current
loop = None
env_touched = False  # a function changed os.environ since the last enter()
dir_touched = False  # a function changed the directory since the last enter()
last_target = None  # (module, export, cwd, target) of the last call: calls of one function follow


class _WatchedEnviron(type(os.environ)):
    """os.environ, noting a change a function makes (the worker's own go around it)."""

    def __setitem__(self, key, value):
        global env_touched
        env_touched = True
        super().__setitem__(key, value)

    def __delitem__(self, key):
        global env_touched
        env_touched = True
        super().__delitem__(key)


_environ_set = type(os.environ).__setitem__
_environ_del = type(os.environ).__delitem__
os.environ.__class__ = _WatchedEnviron
environ = os.environ  # the worker's own changes go around the watch, to this object
_chdir = os.chdir
_fchdir = os.fchdir


def _watched_chdir(path):
    global dir_touched
    dir_touched = True
    _chdir(path)


def _watched_fchdir(fd):
    global dir_touched
    dir_touched = True
    _fchdir(fd)


os.chdir = _watched_chdir
os.fchdir = _watched_fchdir


def die(why):
    sys.stderr.flush()
    os.write(2, f"pilotfish function worker: {why}\n".encode())  # never a call's output
    os._exit(70)


def write_all(data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(4, view)
        except BrokenPipeError:
            os._exit(0)  # the parent is gone: nobody to answer
        view = view[n:]


def send(msg):
    payload = msgpack.packb(msg, use_bin_type=True)
    write_all(len(payload).to_bytes(4, "big") + payload)


# ---- what a call prints -------------------------------------------------------------------
# With init's maxOutputBytes, sys.stdout and sys.stderr keep what is written while a call runs
# (from just before its function is called to its answer) for that call, threads it started
# included, and pass the rest to the log files as before: a module's import, a thread or
# coroutine still running after its call was answered. What a subprocess writes to the
# inherited fds 1 and 2 (and os.write(1, ...)) goes to the log files too. The bytes kept are
# call-output.ts's (the Node worker): keep the two in step.

cap_id = None  # the call whose output is kept now
cap_call = None  # ... and that call
cap_out = None
cap_lock = threading.Lock()


class CallOutput:
    """One call's output under its cap (both streams together): the first half as it comes,
    past it only the last half, after a line '[pilotfish: N bytes dropped]' in each stream that
    lost bytes (a newline first when the head ended in a line)."""

    __slots__ = ("head", "tail", "framed", "heads", "held", "held_bytes", "dropped", "ended")

    def __init__(self, cap):
        self.head = (cap + 1) // 2
        self.tail = cap - self.head
        self.framed = 0
        self.heads = ([], [])
        self.held = collections.deque()  # [k, bytes], oldest first
        self.held_bytes = 0
        self.dropped = [0, 0]
        self.ended = [True, True]  # a stream's last byte kept ended a line

    def write(self, k, data):
        if not data:
            return
        room = self.head - self.framed
        if room > 0:
            now = data[:room]
            self.framed += len(now)
            self.heads[k].append(now)
            self.ended[k] = now[-1:] == b"\n"
            data = data[len(now) :]
        if not data:
            return
        self.held.append([k, data])
        self.held_bytes += len(data)
        while self.held_bytes > self.tail:
            first = self.held[0]
            cut = min(self.held_bytes - self.tail, len(first[1]))
            self.dropped[first[0]] += cut
            self.held_bytes -= cut
            if cut == len(first[1]):
                self.held.popleft()
            else:
                first[1] = first[1][cut:]

    def result(self, r):
        """Puts the output in result r: stdout, stderr (a stream that got nothing left out)."""
        for k, key in ((0, "stdout"), (1, "stderr")):
            parts = self.heads[k]
            if self.dropped[k]:
                nl = "" if self.ended[k] else "\n"
                parts.append(f"{nl}[pilotfish: {self.dropped[k]} bytes dropped]\n".encode())
            parts.extend(d for j, d in self.held if j == k)
            if parts:
                r[key] = b"".join(parts)
        if self.dropped[0] + self.dropped[1]:
            r["dropped"] = self.dropped[0] + self.dropped[1]


def keep(k, data):
    """Keeps data for the call that runs; False when none does (the caller writes it through)."""
    global cap_out
    with cap_lock:
        if cap_id is None:
            return False
        if cap_out is None:
            cap = cap_call.get("cap", max_output_bytes)
            cap_out = CallOutput(min(cap, max_output_bytes))
        cap_out.write(k, data)
        return True


def spill():
    """The worker ends while a call runs: what it printed goes to the log files."""
    global cap_id, cap_out
    with cap_lock:
        out, cap_out, cap_id = cap_out, None, None
    if out is None:
        return
    r = {}
    out.result(r)
    for fd, key in ((1, "stdout"), (2, "stderr")):
        data = r.get(key, b"")
        while data:
            try:
                data = data[os.write(fd, data) :]
            except OSError:
                break


def encoded(s):
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace")


class _CapturedBuffer:
    """sys.stdout.buffer (bytes) of a captured stream."""

    def __init__(self, real, k):
        self._real = real
        self._k = k

    def write(self, b):
        if cap_id is not None and keep(self._k, bytes(b)):
            return len(b)
        return self._real.write(b)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _CapturedStream:
    """sys.stdout or sys.stderr once capture is on (text)."""

    def __init__(self, real, k):
        self._real = real
        self._k = k
        raw = getattr(real, "buffer", None)
        self.buffer = _CapturedBuffer(raw, k) if raw is not None else None

    def write(self, s):
        if cap_id is not None:
            if not isinstance(s, str):
                raise TypeError(f"write() argument must be str, not {type(s).__name__}")
            if keep(self._k, encoded(s)):
                return len(s)
        return self._real.write(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._real, name)


def install_capture():
    if not isinstance(sys.stdout, _CapturedStream):
        sys.stdout = _CapturedStream(sys.stdout, 0)
        sys.stderr = _CapturedStream(sys.stderr, 1)


# ---- reading fd 3 -------------------------------------------------------------------------

inbuf = bytearray()


def on_readable():
    try:
        chunk = os.read(3, 1 << 20)
    except BlockingIOError:
        return
    except OSError as e:
        die(f"fd 3: {e}")
    if not chunk:
        os._exit(0)  # the parent closed the requests or died
    inbuf.extend(chunk)
    while len(inbuf) >= 4:
        need = int.from_bytes(inbuf[:4], "big")
        if len(inbuf) < 4 + need:
            break
        payload = bytes(inbuf[4 : 4 + need])
        del inbuf[: 4 + need]
        try:
            m = msgpack.unpackb(payload, raw=False, timestamp=3, strict_map_key=False)
        except Exception as e:  # noqa: BLE001 - any unreadable frame ends the stream
            die(f"unreadable frame: {e}")
        on_message(m)


def on_message(m):
    global max_result_bytes, max_output_bytes
    t = m.get("t") if isinstance(m, dict) else None
    if t == "init":
        if m.get("protocol") != PROTOCOL_VERSION:
            die(f"protocol {m.get('protocol')} asked, {PROTOCOL_VERSION} spoken")
        max_result_bytes = m.get("maxResultBytes", max_result_bytes)
        max_output_bytes = m.get("maxOutputBytes") or 0
        if max_output_bytes > 0:
            install_capture()
    elif t == "calls":
        for c in m["calls"]:
            waiting.add(c["id"])
            queue.append(c)
        if idle:
            loop.stop()
    elif t == "cancel":
        cancel(m["ids"])
        flush()  # at once, even while a coroutine runs
    else:
        die(f"unknown message {t!r}")


def cancel(ids):
    for i in ids:
        if current is not None and current["id"] == i:
            abandon(current)
            reply(failure(i, canceled("while it ran"), "call"))
        elif i in waiting:
            waiting.discard(i)
            dropped.add(i)
            reply(failure(i, canceled("before it started"), "call"))


def canceled(when):
    return {"name": "Canceled", "message": f"the call was canceled {when}"}


def abandon(me):
    """Stops waiting for a coroutine: cancelled, and left to the loop if it ignores that."""
    global current
    me["abandoned"] = True
    me["task"].cancel()
    if not me["waiter"].done():
        me["waiter"].set_result(None)
    current = None


# ---- running calls ------------------------------------------------------------------------


def serve():
    """Runs queued calls; idle, runs the loop (reading fd 3) until calls come."""
    global idle
    while True:
        if not queue:
            flush()
            idle = True
            loop.run_forever()  # on_message stops it when calls come
            idle = False
            continue
        c = queue.popleft()
        absorb(c)  # a dropped call's changes hold for the calls after it
        if c["id"] in dropped:
            dropped.discard(c["id"])
            continue
        waiting.discard(c["id"])
        run(c)


def run(c):
    global cap_id, cap_call
    try:
        enter()
        target = find_target(c)
    except Exception as e:  # noqa: BLE001 - its directory cannot be entered: the call fails
        reply(failure(c["id"], wire_error(e), "call"))
        return
    if "error" in target:
        reply(failure(c["id"], target["error"], target["phase"]))
        return
    if max_output_bytes:  # what it prints from now until its answer is its own
        if cap_out is not None:
            spill()  # a thread printed just as its call was answered: to the log files
        cap_call = c  # its cap is read when it first prints
        cap_id = c["id"]  # last: keep() takes this for the call's start (no lock: the GIL)
    try:
        value = target["fn"](*c.get("args", []))
    except Exception as e:  # noqa: BLE001 - what the function raised is the call's outcome
        reply(failure(c["id"], wire_error(e), "call"))
        return
    if inspect.isawaitable(value):
        await_call(c["id"], value)
    else:
        reply(success(c["id"], value))


def await_call(i, awaitable):
    """Runs the loop until the coroutine ends or is canceled; results so far go out first."""
    global current
    flush()
    task = asyncio.ensure_future(awaitable, loop=loop)
    waiter = loop.create_future()
    me = {"id": i, "task": task, "waiter": waiter, "abandoned": False}
    current = me
    task.add_done_callback(lambda t: settle(me, t))
    loop.run_until_complete(waiter)


def settle(me, task):
    global current
    if me["abandoned"]:
        if not task.cancelled():
            task.exception()  # retrieved: asyncio would log it as never retrieved
        return
    current = None
    if task.cancelled():
        reply(failure(me["id"], canceled("while it ran"), "call"))
    else:
        e = task.exception()
        if e is None:
            reply(success(me["id"], task.result()))
        else:
            reply(failure(me["id"], wire_error(e), "call"))
    me["waiter"].set_result(None)


def is_path(module):
    return module.endswith(".py") or "/" in module


def find_target(c):
    global last_target
    module = c["module"]
    name = c.get("export")
    base = call_dir
    last = last_target
    if last is not None and last[0] == module and last[1] == name and last[2] == base:
        return last[3]
    # a file is one module whatever the cwd; a dotted name is one module per worker (sys.modules)
    key = os.path.normpath(os.path.join(base, module)) if is_path(module) else module
    loaded = modules.get(key)
    if loaded is None:
        loaded = load(module, key, base, call_env.get("PYTHONPATH"))
        modules[key] = loaded
        enter()  # its top level may have changed the environment or directory
    if loaded[0] == "error":
        target = {"error": loaded[1], "phase": "import"}
    else:
        target = pick(loaded[1], c)
    last_target = (module, name, base, target)
    return target


def load(module, key, base, pythonpath):
    """Imports a module once: a dotted name from sys.path (the call's cwd first), or a file."""
    # base is the directory now (enter()): a dotted name is found there ('' on sys.path)
    try:
        if pythonpath:
            # the task's PYTHONPATH: kept on sys.path, for the imports its functions make later
            for entry in reversed(pythonpath.split(os.pathsep)):
                entry = os.path.join(base, entry) if entry else ""
                if entry and entry not in sys.path:
                    sys.path.insert(1, entry)
        importlib.invalidate_caches()  # files written since the last import are seen
        if not is_path(module):
            return ("ok", importlib.import_module(module))
        if not os.path.isfile(key):
            return ("error", {"name": "ModuleNotFoundError", "message": f"no file '{key}'"})
        name = "pf_fn_" + "".join(ch if ch.isalnum() else "_" for ch in key)
        spec = importlib.util.spec_from_file_location(name, key)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        return ("ok", mod)
    except Exception as e:  # noqa: BLE001 - a module that does not import fails its calls
        return ("error", wire_error(e))


def pick(mod, c):
    name = c.get("export")
    fn = getattr(mod, name, None) if name is not None else None
    if callable(fn):
        return {"fn": fn}
    names = sorted(
        k for k, v in vars(mod).items() if not k.startswith("_") and inspect.isfunction(v)
    )
    listed = ", ".join(names) if names else "none"
    if name is None:
        message = (
            f"module '{c['module']}': name the function to call in function.export "
            f"(Python modules have no default export); its functions: {listed}"
        )
    else:
        message = f"module '{c['module']}' has no function '{name}'; its functions: {listed}"
    return {"error": {"name": "TypeError", "message": message}, "phase": "call"}


def absorb(c):
    """Takes in the changes a call brings to the calls' environment and directory."""
    global call_dir, env_touched
    unset = c.get("unset")
    if unset:
        for k in unset:
            call_env.pop(k, None)
        changed.extend(unset)
    env = c.get("env")
    if env:
        call_env.update(env)
        changed.extend(env)
    cwd = c.get("cwd")
    if cwd is not None:
        call_dir = cwd or home_dir
    if len(changed) > MAX_CHANGED:  # calls dropped one after the other pile changes up
        env_touched = True


def enter():
    """Makes os.environ and the directory the call's, changing only what differs from the last.
    Raises when the directory cannot be entered (the process stays where it was)."""
    global changed, env_touched, dir_touched, cwd_now
    if os.environ is not environ:
        os.environ = environ  # a function replaced it: the next calls see the environment again
        env_touched = True
    if env_touched:
        # a function changed os.environ itself: all of the call's environment again
        for k in [k for k in saved_env if k not in call_env]:
            restore_key(k)
        for k in call_env:
            put(k)
        env_touched = False
    else:
        for k in changed:
            put(k)
    changed = []
    if call_dir != cwd_now or dir_touched:
        _chdir(call_dir)
        cwd_now = call_dir
        dir_touched = False


def put(k):
    """os.environ[k] as call_env has it: its value, or the worker's own."""
    v = call_env.get(k)
    if v is None:
        if k in saved_env:
            restore_key(k)
        return
    if k not in saved_env:
        saved_env[k] = environ.get(k)
    _environ_set(environ, k, v)


def restore_key(k):
    before = saved_env.pop(k, None)
    if before is None:
        if k in environ:
            _environ_del(environ, k)
    else:
        _environ_set(environ, k, before)


# ---- results and errors -------------------------------------------------------------------


def success(i, value):
    if value is None and max_result_bytes >= 1:
        return {"id": i, "ok": True, "value": NIL}  # a function that returns nothing: most
    bad = unencodable(value)
    if bad is not None:
        return failure(i, {"name": "EncodeError", "message": bad}, "encode")
    try:
        packed = msgpack.packb(value, use_bin_type=True, datetime=True)
    except Exception as e:  # noqa: BLE001 - the checks above should have caught it
        return failure(i, {"name": "EncodeError", "message": f"result: {e}"}, "encode")
    if len(packed) > max_result_bytes:
        message = (
            f"result is {size_text(len(packed))} encoded, over the limit of "
            f"{size_text(max_result_bytes)}: return less, or write it to a file and return its path"
        )
        return failure(i, {"name": "ResultTooLarge", "message": message}, "encode")
    return {"id": i, "ok": True, "value": packed}


def unencodable(value):
    """Why `value` cannot be encoded (`path: what`), or None: plain data only, as the Node worker."""
    bad = check(value, [], 0)
    if bad is None:
        return None
    what, steps = bad
    steps.reverse()  # collected on the way back up
    if isinstance(what, int):  # a cycle back to the container at that depth
        what = f"a cycle (it is the value at {'result' + ''.join(steps[:what])})"
    return f"result{''.join(steps)}: {what}"


def check(value, parents, depth):
    """None, or (what is wrong, the path's steps from the value up): no path built on success."""
    if value is None or isinstance(value, (bool, str, float, bytes, bytearray)):
        return None
    if isinstance(value, int):
        if INT64_MIN <= value <= UINT64_MAX:
            return None
        return (f"an int beyond 64 bits cannot be encoded ({value})", [])
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return ("a datetime without tzinfo cannot be encoded (give it a timezone)", [])
        return None
    if not isinstance(value, (list, tuple, dict)):
        return (f"{describe(value)} cannot be encoded (return dicts, lists and plain values)", [])
    for n, parent in enumerate(parents):
        if parent is value:
            return (n, [])
    if depth >= MAX_DEPTH:
        return (f"nested deeper than {MAX_DEPTH} levels", [])
    parents.append(value)
    try:
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    what = f"a key of type {type(k).__name__} cannot be encoded (keys are strings)"
                    return (what, [f"[{k!r}]"])
                bad = check(v, parents, depth + 1)
                if bad is not None:
                    bad[1].append(f"[{k!r}]")
                    return bad
        else:
            for n, v in enumerate(value):
                bad = check(v, parents, depth + 1)
                if bad is not None:
                    bad[1].append(f"[{n}]")
                    return bad
        return None
    finally:
        parents.pop()


def describe(value):
    t = type(value)
    if t in (set, frozenset, complex):
        return f"a {t.__name__}"
    if inspect.isroutine(value):
        return "a function"
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    return f"an instance of class {name}"


def size_text(n):
    if n < 1024:
        return f"{n} bytes"
    unit, scale = ("KiB", 1024) if n < 1024 * 1024 else ("MiB", 1024 * 1024)
    return f"{n} bytes ({n / scale:.1f} {unit})"


def failure(i, error, phase):
    return {"id": i, "ok": False, "error": error, "phase": phase}


def cut(text):
    return text if len(text) <= MAX_ERROR_TEXT else text[:MAX_ERROR_TEXT] + "... (cut)"


def wire_error(e):
    """An exception as the protocol carries it: class name, str(e), its traceback, its code."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next  # the worker's own frames above the function's
    out = {"name": type(e).__name__, "message": cut(str(e))}
    stack = "".join(traceback.format_exception(type(e), e, tb))
    out["stack"] = cut(stack.rstrip("\n"))
    code = getattr(e, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        out["code"] = errno.errorcode[code]
    elif isinstance(code, str):
        out["code"] = code
    return out


def reply(r):
    global cap_id, cap_out
    if cap_id is not None and r["id"] == cap_id:
        if cap_out is None:
            cap_id = None  # it printed nothing (what a thread prints from now goes to the log)
        else:
            with cap_lock:  # a thread of the call may be writing
                out, cap_out, cap_id = cap_out, None, None
            out.result(r)
    outbox.append(r)


def flush():
    """The results not yet sent, in frames of about REPLY_FRAME_TARGET_BYTES."""
    global outbox
    if not outbox:
        return
    results, outbox = outbox, []
    batch = []
    size = 0
    for r in results:
        batch.append(r)
        if r["ok"]:
            size += len(r["value"])
        else:
            size += 3 * (len(r["error"]["message"]) + len(r["error"].get("stack", "")))
        size += len(r.get("stdout", b"")) + len(r.get("stderr", b""))
        if size >= REPLY_FRAME_TARGET_BYTES:
            send({"t": "done", "results": batch})
            batch = []
            size = 0
    if batch:
        send({"t": "done", "results": batch})


def main():
    global loop
    try:
        os.fstat(3)
        os.fstat(4)
    except OSError:
        die("fds 3 and 4 are not open: this worker is started by a pilotfish FunctionPool")
    os.set_blocking(3, False)
    os.set_blocking(4, True)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.add_reader(3, on_readable)
    send(
        {
            "t": "ready",
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "language": "python",
            "version": platform.python_version(),
        }
    )
    try:
        serve()
    finally:
        # a function ended the worker (sys.exit): the calls that ran before it still answer, else
        # the pool would take the first of them for the one that ended it, and run that again
        flush()
        spill()  # what that function printed: to the log files


if __name__ == "__main__":
    main()
