"""Server-sent events, read from an http.client response, and streams that resume where they
were cut: a reconnect sends the last id seen (``Last-Event-ID``), so nothing is missed or
repeated."""

import http.client
import socket
import time

# what a cut connection raises while a stream is read
CUT = (OSError, http.client.HTTPException, socket.timeout, ValueError)


class End(Exception):
    """Raised by a stream's handler: the stream is over."""


def read_events(response):
    """(id, event, data) for each event of the stream, until it ends."""
    ev_id, ev_type, data = None, "message", []
    while True:
        raw = response.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data or ev_id is not None:
                yield ev_id, ev_type, "\n".join(data)
            ev_id, ev_type, data = None, "message", []
            continue
        if line.startswith(":"):
            continue  # a comment: the service's keep-alive
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "id":
            ev_id = value
        elif field == "event":
            ev_type = value
        elif field == "data":
            data.append(value)


def resuming(open_stream, handle, last_id=None, retry=True, max_backoff=5.0):
    """Events from ``open_stream(last_id)`` (an (HTTPConnection, response) pair), opened again
    with the last id seen after a cut. ``handle(id, event, data)`` returns what to yield (None
    for nothing) and raises End to end the stream."""
    backoff = 0.05
    while True:
        conn = None
        try:
            conn, response = open_stream(last_id)
            backoff = 0.05
            for ev_id, ev_type, data in read_events(response):
                out = handle(ev_id, ev_type, data)
                if ev_id is not None:
                    last_id = ev_id
                if out is not None:
                    yield out
        except End:
            return
        except CUT:
            if not retry:
                raise
        finally:
            if conn is not None:
                conn.close()
        if not retry:
            return
        time.sleep(backoff)  # the service away: again, a little later each time
        backoff = min(backoff * 2, max_backoff)
