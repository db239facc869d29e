"""A throw-away PostgreSQL cluster of its own, and the server faults that can be done to it.

``Cluster.create()`` runs ``initdb`` into a fresh temporary folder and
``pg_ctl start`` on a free port of 127.0.0.1 (trust authentication, TCP only),
so fault injection never touches a server anyone else uses; ``destroy()``
stops it and removes the folder. ``initdb`` refuses to run as root, so as root
the server runs as an unprivileged user: ``$FENCEPOST_PG_USER`` if set, else
``postgres`` (the Debian/Ubuntu packages' user), else ``ClusterUnavailable``
says what to do (create one with ``useradd``). ``unavailable()`` says, in one
line, why a cluster cannot be made here (for a test's skip reason), or None.

The faults (``FAULTS``), each a method:

* ``terminate``: every client backend is ended with ``pg_terminate_backend``
  (an operator, an idle reaper, a failover proxy): calls in flight lose their answer.
* ``crash``: ``pg_ctl stop -m immediate`` (every server process killed, no
  checkpoint: a crash), then started again at once (crash recovery).
* ``refuse``: the server is stopped and kept down for ``down`` seconds, so
  every connection attempt meanwhile is refused, then started again.
* ``pause``: every server process is stopped with SIGSTOP for ``seconds`` (a
  VM pause, a stop-the-world stall), past a client's call timeout, then continued.

Failover (issue 34): ``replica(via_port)`` makes a streaming standby of the
cluster (``pg_basebackup -R``, a cluster of its own in its own folder), whose
WAL comes from ``127.0.0.1:via_port`` (a proxy the caller controls, so it can
cut the replication link) or straight from the primary; ``synchronous(name)``
makes the primary wait for that standby before a commit returns (``None``:
asynchronous again); ``promote()`` makes a standby the primary.

The cluster runs with ``fsync = off``: the faults kill processes, never the
machine, and what a process wrote survives its death in the OS page cache,
so a commit that was acknowledged (written to the log before the answer) is
still there after a ``crash``. It says nothing about power loss.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

#: The fault kinds a ``Cluster`` can inject, in the order the docs list them.
FAULTS = ("terminate", "crash", "refuse", "pause")

#: The environment variable naming the unprivileged user the server runs as when we are root.
USER_VARIABLE = "FENCEPOST_PG_USER"

#: The environment variable naming the folder holding ``initdb`` and ``pg_ctl`` (else found on PATH).
BIN_VARIABLE = "FENCEPOST_PG_BIN"

#: Real seconds ``pg_ctl`` may take to start or stop the server before the fault fails.
PG_CTL_TIMEOUT = 60

#: The cluster's own user, its superuser, trusted from 127.0.0.1.
SUPERUSER = "fencepost"

#: Settings of the throw-away server: small, quick, and loud about nothing.
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",  # processes die in these faults, never the machine (see the module docstring)
    "full_page_writes": "off",
    "shared_buffers": "'32MB'",
    "max_connections": "100",
    "log_min_messages": "fatal",
    "log_connections": "off",
    "restart_after_crash": "on",
}


class ClusterUnavailable(RuntimeError):
    """A cluster cannot be made here; the message is one line saying why and what would fix it."""


def _binary(name: str) -> str | None:
    folder = os.environ.get(BIN_VARIABLE)
    if folder:
        path = Path(folder) / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name)


def _server_user() -> pwd.struct_passwd | None:
    """The user the server runs as: None for ourselves (not root), else the unprivileged one."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get(USER_VARIABLE) or "postgres"
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise ClusterUnavailable(
            f"initdb refuses to run as root and there is no user {name!r} to run it as: "
            f"create one (useradd --system {name}) or set {USER_VARIABLE} to an unprivileged user"
        ) from None


def unavailable(programs: tuple[str, ...] = ("initdb", "pg_ctl")) -> str | None:
    """Why no cluster can be made here (one line), or None if one can.

    ``programs``: the server binaries needed (add ``pg_basebackup`` for ``Cluster.replica``).
    """
    for name in programs:
        if _binary(name) is None:
            where = f"in {BIN_VARIABLE}={os.environ[BIN_VARIABLE]!r}" if os.environ.get(BIN_VARIABLE) else "on PATH"
            return f"the PostgreSQL server binaries are missing: no {name} {where} (install the server, or set {BIN_VARIABLE})"
    try:
        _server_user()
    except ClusterUnavailable as exc:
        return str(exc)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """A PostgreSQL server in a temporary folder of its own; see the module docstring.

    Use as a context manager, or call ``destroy()``. ``dsn`` names its
    ``postgres`` database as ``fencepost`` (trust authentication).
    """

    def __init__(self, root: Path, port: int, user: pwd.struct_passwd | None) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.user = user
        self.dsn = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
        self.injected: dict[str, int] = dict.fromkeys(FAULTS, 0)

    # ------------------------------------------------------------ life

    @classmethod
    def create(cls) -> Cluster:
        """initdb and start a new cluster; ``ClusterUnavailable`` (one line) if that cannot be done here."""
        why = unavailable()
        if why is not None:
            raise ClusterUnavailable(why)
        user = _server_user()
        port = _free_port()
        cluster = cls(Path(tempfile.mkdtemp(prefix="fencepost-pg-")), port, user)  # from here on destroy() removes it
        try:
            cluster._give_root()
            cluster._pg("initdb", "-D", str(cluster.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
                        "--no-sync", "--no-instructions")
            with (cluster.data / "postgresql.conf").open("a") as conf:
                conf.write(f"\nport = {cluster.port}\nunix_socket_directories = '{cluster.root}'\n")
                for name, value in SERVER_SETTINGS.items():
                    conf.write(f"{name} = {value}\n")
            cluster.start()
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    def replica(self, via_port: int | None = None, name: str = "standby") -> Cluster:
        """A streaming standby of this cluster, started; its WAL comes through ``127.0.0.1:via_port`` if given.

        ``name`` is its ``application_name``, which ``synchronous`` names. The
        standby is a cluster of its own (``destroy()`` it too). Its settings are
        the primary's at the time of the copy: call ``synchronous`` afterwards,
        or a promoted standby would wait for a standby of its own.

        Raises:
            ClusterUnavailable: no ``pg_basebackup``, or it failed (one line saying why).
        """
        why = unavailable(("pg_basebackup",))
        if why is not None:
            raise ClusterUnavailable(why)
        port = _free_port()
        standby = type(self)(Path(tempfile.mkdtemp(prefix="fencepost-pg-standby-")), port, self.user)  # destroy() removes it
        source = (f"host=127.0.0.1 port={via_port or self.port} user={SUPERUSER} sslmode=disable "
                  f"gssencmode=disable application_name={name}")
        try:
            standby._give_root()
            standby._pg("pg_basebackup", "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast", "-d", source)
            with (standby.data / "postgresql.conf").open("a") as conf:  # later lines win over the primary's
                conf.write(f"\nport = {standby.port}\nunix_socket_directories = '{standby.root}'\n")
            standby.start()
        except BaseException:
            standby.destroy()
            raise
        return standby

    def synchronous(self, name: str | None) -> None:
        """Make commits wait until standby ``name`` has flushed them (None: no longer wait for any)."""
        setting = (sql.SQL("ALTER SYSTEM SET synchronous_standby_names = {}").format(sql.Literal(f'"{name}"'))
                   if name is not None else sql.SQL("ALTER SYSTEM RESET synchronous_standby_names"))
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(setting)
            conn.execute("SELECT pg_reload_conf()")

    def promote(self) -> None:
        """Make this standby a primary (``pg_ctl promote``), waiting until it accepts writes."""
        self._pg("pg_ctl", "promote", "-D", str(self.data), "-w", "-t", str(PG_CTL_TIMEOUT))

    def _give_root(self) -> None:
        """Make the server's user the owner of the cluster's folder (nothing to do when that is us)."""
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)

    def _pg(self, program: str, *args: str) -> None:
        kwargs: dict = {}
        if self.user is not None:
            kwargs = dict(user=self.user.pw_uid, group=self.user.pw_gid, extra_groups=[])
        done = subprocess.run([_binary(program), *args], capture_output=True, text=True, cwd=self.root,
                              timeout=PG_CTL_TIMEOUT * 2, check=False, **kwargs)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
            raise ClusterUnavailable(f"{program} {' '.join(args[:2])} failed: {last}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._pg("pg_ctl", "start", "-D", str(self.data), "-l", str(self.root / "server.log"),
                 "-w", "-t", str(PG_CTL_TIMEOUT))

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: pg_ctl's smart, fast or immediate) and wait until it is down."""
        self._pg("pg_ctl", "stop", "-D", str(self.data), "-m", mode, "-w", "-t", str(PG_CTL_TIMEOUT))

    def destroy(self) -> None:
        """Stop the server (resuming it first if paused) and remove its folder. Idempotent, never raises."""
        with contextlib.suppress(Exception):
            self._signal_all(signal.SIGCONT)
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    # ------------------------------------------------------------ faults

    def inject(self, fault: str, *, down: float = 1.5, seconds: float = 3.0) -> None:
        """Do one fault of ``FAULTS`` (``down``: refuse's seconds without a server; ``seconds``: pause's)."""
        if fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}: {fault!r}")
        if fault == "terminate":
            self.terminate()
        elif fault == "crash":
            self.crash()
        elif fault == "refuse":
            self.refuse(down)
        else:
            self.pause(seconds)

    def terminate(self) -> int:
        """End every client backend but this call's own; how many were ended."""
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
            ended = conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        self.injected["terminate"] += 1
        return ended

    def crash(self) -> None:
        """Kill the server without a checkpoint (``pg_ctl stop -m immediate``) and start it again."""
        self.stop("immediate")
        self.start()
        self.injected["crash"] += 1

    def refuse(self, down: float) -> None:
        """Stop the server, refuse every connection for ``down`` real seconds, start it again."""
        self.stop("immediate")
        time.sleep(down)  # the fault itself: this long without a server
        self.start()
        self.injected["refuse"] += 1

    def pause(self, seconds: float) -> None:
        """SIGSTOP every server process for ``seconds`` real seconds, then SIGCONT them."""
        self._signal_all(signal.SIGSTOP)
        try:
            time.sleep(seconds)  # the fault itself: a server that does nothing this long
        finally:
            self._signal_all(signal.SIGCONT)
        self.injected["pause"] += 1

    def _signal_all(self, sig: int) -> None:
        """Send ``sig`` to the postmaster and every process under it."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    ppid = int(stat.rsplit(")", 1)[1].split()[1])
                    children.setdefault(ppid, []).append(int(entry))
        todo, seen = [postmaster], []
        while todo:
            pid = todo.pop()
            seen.append(pid)
            todo.extend(children.get(pid, []))
        for pid in seen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
