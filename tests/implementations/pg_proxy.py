"""A TCP proxy the tests control, between a PostgreSQL client and its server: network faults on demand.

``Proxy(target_port)`` listens on a free port of 127.0.0.1 and forwards every
connection to ``127.0.0.1:target_port`` (``retarget`` points new connections
elsewhere: a failover). ``dsn(base)`` is ``base`` through the proxy, with TLS
and GSS encryption off so the bytes are the plain protocol. The faults:

* ``drop()``: every connection is closed on both sides at once (a NAT or
  firewall that forgets its flows, a proxy restart): the client sees the end of
  the stream, the server too.
* ``latency``: seconds each chunk of bytes waits before it is forwarded, in
  both directions (a slow or distant link). ``hold("down")`` holds the server's
  answers until ``release("down")``: an answer that arrives later than the
  client waits for.
* ``partition()``: nothing is forwarded any more and nothing is closed (a
  half-open connection: both ends believe the link is up); a new connection is
  accepted and never reaches the server. ``heal()`` lets the held bytes through.
* ``arm("drop request")``: the next chunk any client sends is not forwarded and
  its connection is dropped: the call was sent and never reached the server.
* ``arm("cut after commit")``: the next chunk any client sends is forwarded; the
  server's answers on that connection are held until its ``ReadyForQuery``
  arrives (the server has then finished the statement and, in autocommit,
  committed it), and the connection is dropped without a byte of that answer
  reaching the client.

``fired`` is set when an armed fault has happened. Every blocking wait in the
proxy ends when the proxy closes, so no thread outlives ``close()`` for long.
Bytes from the server are parsed into messages (a type byte and a length) so
the cut comes exactly after the commit, never in the middle of an answer.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from psycopg.conninfo import make_conninfo

#: The fault ``arm`` takes.
ARMED = ("drop request", "cut after commit")

#: Bytes read from a socket at a time.
CHUNK = 65536


class _Link:
    """One client connection and its server connection; closing either closes both."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.server: socket.socket | None = None
        self.closed = threading.Event()
        self.cut_on_ready = False  # "cut after commit" chose this link: hold answers until ReadyForQuery

    def close(self) -> None:
        self.closed.set()
        for sock in (self.client, self.server):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv on it
                with contextlib.suppress(OSError):
                    sock.close()


class Proxy:
    """See the module docstring. Use as a context manager, or call ``close()``."""

    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.latency = 0.0
        self.fired = threading.Event()
        self.accepted = 0  # connections accepted so far
        self._flowing = {"up": threading.Event(), "down": threading.Event()}
        for flowing in self._flowing.values():
            flowing.set()
        self._armed: str | None = None
        self._lock = threading.Lock()
        self._links: set[_Link] = set()
        self._closing = threading.Event()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, name="pg-proxy-accept", daemon=True)]
        self._threads[0].start()

    def dsn(self, base: str) -> str:
        """``base`` (a URL or key=value dsn) connecting through this proxy, in plain text."""
        return make_conninfo(base, host="127.0.0.1", port=self.port, sslmode="disable", gssencmode="disable")

    # ------------------------------------------------------------ faults

    def drop(self) -> int:
        """Close every connection on both sides now; how many there were."""
        with self._lock:
            links, self._links = list(self._links), set()
        for link in links:
            link.close()
        return len(links)

    def hold(self, direction: str) -> None:
        """Stop forwarding ``direction`` ("up": to the server, "down": to the client); nothing is closed."""
        self._flowing[direction].clear()

    def release(self, direction: str) -> None:
        """Forward ``direction`` again, the held bytes first."""
        self._flowing[direction].set()

    def partition(self) -> None:
        """A half-open network: nothing forwarded either way, nothing closed, new connections never reach the server."""
        self.hold("up")
        self.hold("down")

    def heal(self) -> None:
        self.release("up")
        self.release("down")

    def arm(self, fault: str) -> None:
        """Do ``fault`` (one of ``ARMED``) to the next chunk a client sends; ``fired`` is set when done."""
        if fault not in ARMED:
            raise ValueError(f"fault must be one of {', '.join(ARMED)}: {fault!r}")
        with self._lock:
            self.fired.clear()
            self._armed = fault

    def retarget(self, port: int) -> None:
        """Send new connections to ``127.0.0.1:port`` (the ones open stay where they are)."""
        self.target = (self.target[0], port)

    def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.drop()  # bytes held by a partition or a hold are never delivered: their waits see the proxy closing

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ forwarding

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            link = _Link(client)
            with self._lock:
                self.accepted += 1
                self._links.add(link)
            threading.Thread(target=self._open, args=(link,), name="pg-proxy-open", daemon=True).start()

    def _wait_flowing(self, direction: str, link: _Link) -> bool:
        """Until ``direction`` flows (True) or the link or proxy closes (False)."""
        while not self._flowing[direction].wait(0.05):  # re-checks the link, so a drop ends the wait
            if link.closed.is_set() or self._closing.is_set():
                return False
        return not link.closed.is_set()

    def _open(self, link: _Link) -> None:
        if not self._wait_flowing("up", link):  # partitioned: the server never hears of this connection
            return
        try:
            link.server = socket.create_connection(self.target, timeout=10)
            link.server.settimeout(None)
        except OSError:
            link.close()  # nothing listens there: the client sees its connection refused (closed)
            return
        if link.closed.is_set():  # dropped meanwhile
            link.close()
            return
        for args, name in (((link, link.client, link.server, "up"), "pg-proxy-up"),
                           ((link, link.server, link.client, "down"), "pg-proxy-down")):
            threading.Thread(target=self._pump, args=args, name=name, daemon=True).start()

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket, direction: str) -> None:
        parsed = bytearray()  # the server's bytes not yet split into whole messages (direction "down")
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                if self.latency and self._closing.wait(self.latency):  # the delay itself
                    break
                if not self._wait_flowing(direction, link):
                    break
                if direction == "up":
                    with self._lock:
                        armed, self._armed = self._armed, None
                    if armed == "drop request":
                        self.fired.set()
                        break
                    if armed == "cut after commit":
                        link.cut_on_ready = True  # before the request is forwarded: its answer comes after
                else:
                    parsed += data
                    ready = _saw_ready(parsed)
                    if link.cut_on_ready:  # this answer is never forwarded
                        if ready:
                            self.fired.set()  # the server committed and answered; the client gets none of it
                            break
                        continue
                sink.sendall(data)
        except OSError:
            pass
        link.close()
        with self._lock:
            self._links.discard(link)


def _saw_ready(buffer: bytearray) -> bool:
    """Consume the whole messages at the front of ``buffer``; True if one of them was ReadyForQuery ('Z')."""
    ready = False
    while len(buffer) >= 5:
        length = int.from_bytes(buffer[1:5], "big")
        if len(buffer) < 1 + length:
            break
        ready = ready or buffer[0] == ord("Z")
        del buffer[:1 + length]
    return ready
