"""The SQLite scheduler when its file cannot be written (issue 23; docs/faults.md).

A full disk -- the file's own size limit (``max_bytes``), and a real small
file system (a 512 KiB tmpfs, where the machine lets the tests mount one) --
and a file made immutable under the running scheduler (``chattr +i``: as root,
permission bits stop nothing, and Linux keeps an open file writable through a
read-only remount) each give one ``StorageError`` line naming the file; no
acknowledged call is lost (a reopened scheduler has every one), and the next
call once there is room, or the file is writable again, succeeds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from fencepost.impl.durable import DurableScheduler, StorageError
from fencepost.spec.protocol import Status

#: A key long enough that a few dozen submits fill a small file.
PAD = "k" * 200


def _fill(s: DurableScheduler) -> tuple[list[int], StorageError]:
    """Submit keyed tasks until the file refuses one: the ids acknowledged, and the refusal."""
    acknowledged = []
    for n in range(100_000):
        try:
            acknowledged.append(s.submit(key=f"{PAD}{n}"))
        except StorageError as exc:
            return acknowledged, exc
    raise AssertionError("the file never filled up")


def _keeps(path: Path, acknowledged: list[int]) -> None:
    with DurableScheduler(path) as again:
        assert [again.task(i).status for i in acknowledged] == [Status.PENDING] * len(acknowledged)
        with pytest.raises(ValueError, match="unknown"):
            again.task(acknowledged[-1] + 1)  # the refused submit left nothing behind


def test_a_full_file_refuses_in_one_line_keeps_every_acknowledged_call_and_works_once_it_has_room(tmp_path) -> None:
    path = tmp_path / "s.db"
    with DurableScheduler(path, max_bytes=64 * 1024) as s:
        acknowledged, refusal = _fill(s)
        assert len(acknowledged) > 10
        message = str(refusal)
        assert "\n" not in message and message.startswith(f"cannot write {str(path)!r}: database or disk is full")
        with pytest.raises(StorageError):
            s.submit(key=f"{PAD}again")  # still full: refused again, still nothing changed
        assert s.task(acknowledged[-1]).status is Status.PENDING  # reads go on
    _keeps(path, acknowledged)
    with DurableScheduler(path, max_bytes=1024 * 1024) as roomier:
        assert roomier.submit(key=f"{PAD}after") == acknowledged[-1] + 1


def _mount_tmpfs(size: str) -> Path:
    point = Path(tempfile.mkdtemp(prefix="fencepost-tmpfs-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        point.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or done.returncode}): the size-limit test covers a full file")
    return point


def test_a_full_file_system_refuses_in_one_line_and_the_next_call_after_space_returns_succeeds() -> None:
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8); the size-limit test covers a full file")
    point = _mount_tmpfs("512k")
    try:
        ballast = point / "ballast"
        ballast.write_bytes(b"\0" * 256 * 1024)
        path = point / "s.db"
        with DurableScheduler(path) as s:
            acknowledged, refusal = _fill(s)
            assert "database or disk is full" in str(refusal) and "\n" not in str(refusal)
            ballast.unlink()  # space returns
            assert s.submit(key=f"{PAD}after") == acknowledged[-1] + 1
            acknowledged.append(acknowledged[-1] + 1)
        _keeps(path, acknowledged)
    finally:
        subprocess.run(["umount", str(point)], check=False)
        point.rmdir()


def _chattr(flag: str, *paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True, check=False)


def test_a_file_made_immutable_under_a_running_scheduler_refuses_in_one_line_and_works_once_writable(tmp_path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr(1) is missing: cannot make a file read-only under an open scheduler")
    path = tmp_path / "s.db"
    with DurableScheduler(path) as s:
        s.add_worker("w", 1)
        acknowledged = [s.submit(), s.submit()]
        lease = s.dispatch("w", 1, 10)
        files = [path, path.with_name(path.name + "-wal")]
        done = _chattr("+i", *files)
        if done.returncode != 0:
            pytest.skip(f"chattr +i refused here ({done.stderr.strip()}): needs root on a file system with the flag")
        try:
            with pytest.raises(StorageError) as refusal:
                s.complete(lease.task_id, lease.token, 2)
            with pytest.raises(StorageError):
                s.submit()
        finally:
            _chattr("-i", *files)
        message = str(refusal.value)
        assert "\n" not in message and message.startswith(f"cannot write {str(path)!r}: ")
        view = s.task(lease.task_id)
        assert (view.status, view.token) == (Status.RUNNING, lease.token)  # the refused completion changed nothing
        assert s.complete(lease.task_id, lease.token, 2).accepted  # writable again: the same call succeeds
    with DurableScheduler(path) as again:
        assert again.task(acknowledged[0]).status is Status.SUCCEEDED
        assert again.task(acknowledged[1]).status is Status.PENDING
