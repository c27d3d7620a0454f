"""The errors the pilotfish client raises."""

import concurrent.futures


class PilotfishError(Exception):
    """Raised when the service refuses a request: its code, message and, for bad input, the
    JSON paths with what was allowed (``issues``)."""

    def __init__(self, code, message, status=None, issues=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.issues = issues or []


class TaskFailed(PilotfishError):
    """Raised by a call's future (and ``wait(..., raise_on_failure=True)``) when its task ended
    FAILED or CANCELED: ``reason`` is the task's reason (``code``, ``message``, ``detail``)."""

    def __init__(self, uid, state, reason=None):
        reason = reason or {}
        code = reason.get("code", "E_" + state)
        message = reason.get("message", f"task {uid} ended {state}")
        super().__init__(code, f"task {uid} ended {state}: {message}")
        self.uid = uid
        self.state = state
        self.reason = reason


class TaskCanceled(TaskFailed, concurrent.futures.CancelledError):
    """A task that ended CANCELED (a ``concurrent.futures.CancelledError`` too)."""


class VersionMismatch(PilotfishError):
    """Raised before any call runs when the client's Python, cloudpickle or a checked library
    is not the version the pilot's workers have: the message names both."""

    def __init__(self, mismatches):
        text = "; ".join(mismatches)
        super().__init__(
            "E_VERSION_MISMATCH",
            f"the workers cannot run functions pickled here: {text}",
        )
        self.mismatches = list(mismatches)
