"""A fio "server" that dies as fio's client sends it a job, as a real one SIGKILLed at that
moment does: the kernel has accepted the connection, then the socket is reset. fio's
client then drops the host without a word (its send fails; client.c removes the client
and prints nothing), which the fleet client must not take for a gone host unheard."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

# Larger than the socket buffers of loopback, so that fio's client is still
# sending the job when the connection is reset (a short job would already sit
# in the buffers, and fio would then see the reset as a disconnect and say so).
PADDING = "# padding: a job longer than the socket buffers\n" * 200_000


def padded(job_text: str) -> str:
    return job_text + PADDING


@contextmanager
def dropping(host: str, port: int, accepts: int = 1) -> Iterator[int]:
    """Listen on host:port (0: a free port, yielded); reset each of the first `accepts`
    connections 0.5 s after accepting it, then stop listening. Leaving the block
    waits (up to 10 s) for those connections to come and be reset."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(4)
    sock.settimeout(60)
    port = sock.getsockname()[1]

    def serve() -> None:
        try:
            for _ in range(accepts):
                conn, _peer = sock.accept()
                threading.Event().wait(0.5)  # fio's client has filled the buffers and waits
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()  # with linger 0: a reset, not an orderly close
        except OSError:
            pass  # closed under it, or nobody came
        finally:
            sock.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        # the caller's client may still be connecting: give it time to be reset
        thread.join(timeout=10)
        if thread.is_alive():  # nobody came: unblock the accept() still waiting
            with suppress(OSError):
                socket.create_connection((host, port), timeout=1).close()
            thread.join(timeout=5)
        sock.close()
