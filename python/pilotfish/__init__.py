"""pilotfish: the Python client of a pilotfish jobs service (``pilotfish serve``).

    from pilotfish import Client
    c = Client.from_dir("svc")                 # or Client(url, token)
    [t] = c.submit([{"executable": "/bin/echo", "arguments": ["hi"]}])
    c.wait([t["uid"]])

    @c.remote(cores=1)
    def square(x):
        return x * x
    square.map(range(10))

The standard library only (and cloudpickle for remote functions). docs/python.md.
"""

from .client import FINAL, Client, Event
from ._futures import TaskFuture
from .errors import PilotfishError, TaskCanceled, TaskFailed, VersionMismatch
from .remote import RemoteFunction, remote

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Event",
    "FINAL",
    "PilotfishError",
    "RemoteFunction",
    "TaskCanceled",
    "TaskFailed",
    "TaskFuture",
    "VersionMismatch",
    "remote",
]
