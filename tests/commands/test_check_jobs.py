"""``fencepost check --jobs``: the same output for any number of jobs, and Ctrl-C ends every process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fencepost.cli import main
from fencepost.spec.checkers.shards import SHARD_EXAMPLES, shard_seed, shard_sizes

#: Longest a bounded wait here lasts (a loaded CI machine forks and imports slowly); never reached when all is well.
WAIT_S = 120


def _without_timing(text: str) -> list[str]:
    """The output's lines, the summary's seconds taken out (the one thing jobs may change)."""
    import re

    return [re.sub(r"\d+\.\d+s\)", "S)", line) for line in text.splitlines()]


@pytest.mark.parametrize("mutant", ["impl.mutants.token_reuse:Scheduler", "impl.mutants.stale_heap_revives:Scheduler"])
def test_the_verdict_and_counterexample_are_the_same_for_any_number_of_jobs(mutant, capsys):
    outputs = []
    for jobs in (1, 2, 3):
        assert main(["check", mutant, "--seed", "3", "--max-examples", str(3 * SHARD_EXAMPLES), "--coverage",
                     "--jobs", str(jobs)]) == 1
        outputs.append(_without_timing(capsys.readouterr().out))
    assert outputs[0] == outputs[1] == outputs[2]
    assert any(line.startswith("why:") for line in outputs[0])


def test_a_passing_check_merges_the_same_coverage_for_any_number_of_jobs(capsys):
    outputs = []
    for jobs in (1, 2):
        main(["check", "impl:Scheduler", "--max-examples", str(2 * SHARD_EXAMPLES), "--steps", "20", "--coverage",
              "--jobs", str(jobs)])
        outputs.append(_without_timing(capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert "outcomes:" in outputs[0]


def test_shards_split_a_batch_evenly_with_seeds_fixed_by_the_check_not_the_jobs():
    assert shard_sizes(200) == [25] * 8 and shard_sizes(30) == [15, 15] and shard_sizes(1) == [1]
    assert sum(shard_sizes(201)) == 201 and max(shard_sizes(201)) <= SHARD_EXAMPLES
    assert shard_seed(None, 0, 0) is None and shard_seed(7, 2, 0) == 9  # the first shard runs as unsharded
    assert len({shard_seed(None, b, s) for b in range(3) for s in range(8)}) == 24


def test_jobs_must_be_a_whole_number_of_at_least_one(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["check", "impl:Scheduler", "--jobs", "0"])
    assert stop.value.code == 2
    assert "--jobs: must be a whole number >= 1, got '0'" in capsys.readouterr().err


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _as_a_terminal_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads child processes from Linux's /proc")
@pytest.mark.parametrize("command", [["check", "impl:Scheduler", "--jobs", "2", "--max-examples", "4000"],
                                     ["explore", "--jobs", "2"]], ids=["check", "explore"])
def test_ctrl_c_prints_one_line_and_leaves_nothing_running(command):
    # its own session, as a terminal's foreground job: Ctrl-C signals the whole process group
    # Ctrl-C as a terminal's foreground job gets it: SIGINT at its default in the child. A test run
    # started in the background (`cmd &` without job control, `nohup`) ignores SIGINT, and a child
    # inherits that: Python then installs no KeyboardInterrupt, and the check ran on to its end (exit
    # 0, or past the bound under load: two such CI runs). PYTHONFAULTHANDLER: should the check ever
    # outlast its bound, SIGABRT makes every process of the group print where its threads wait.
    proc = subprocess.Popen([sys.executable, "-m", "fencepost", *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"},
                            preexec_fn=_as_a_terminal_job)
    try:
        workers: set[int] = set()
        for _ in range(WAIT_S * 20):  # bounded: until the two workers exist (explore forks them for each large level)
            workers = _children(proc.pid)
            if len(workers) >= 2:
                break
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)  # the check must still be running
        assert len(workers) >= 2, f"{command[0]} never started its workers"
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGABRT)
            _, stacks = proc.communicate(timeout=WAIT_S)
            pytest.fail(f"Ctrl-C did not end {command[0]} within {WAIT_S} s; where its processes waited:\n{stacks[-8000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=WAIT_S)
    assert proc.returncode == 130
    assert err.strip().splitlines() == [f"fencepost {command[0]}: interrupted: no verdict (nothing is left running)"]
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no process of the group is left


def test_a_shard_process_that_dies_ends_the_check_with_one_line_not_a_hang(tmp_path: Path) -> None:
    """multiprocessing.Pool replaces a dead worker and never answers its shard: the check waited for ever."""
    (tmp_path / "dies_in_a_shard.py").write_text(
        "import os\n"
        "from fencepost.impl import Scheduler\n"
        "PARENT = os.getpid()\n"
        "class Dies(Scheduler):\n"
        "    def submit(self, *args, **kwargs):\n"
        "        if os.getpid() != PARENT:\n"
        "            os._exit(7)  # the scheduler ends a forked check process\n"
        "        return super().submit(*args, **kwargs)\n"
    )
    command = [sys.executable, "-m", "fencepost", "check", "dies_in_a_shard:Dies", "--jobs", "2",
               "--max-examples", str(2 * SHARD_EXAMPLES)]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT_S, env=env, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "dies_in_a_shard:Dies: a check process" in done.stderr and "exit status 7" in done.stderr


class _DiesInAFork:
    """A scheduler factory whose schedulers end any forked process they are called in."""

    def __init__(self) -> None:
        self.parent = os.getpid()

    def __call__(self) -> object:
        from fencepost.impl import Scheduler

        parent = self.parent

        class Dies(Scheduler):
            def submit(self, *args, **kwargs):
                if os.getpid() != parent:
                    os._exit(7)
                return super().submit(*args, **kwargs)

        return Dies()


def test_an_explore_share_process_that_dies_is_shard_worker_died_not_a_hang(monkeypatch):
    from fencepost.spec.checkers import levels
    from fencepost.spec.checkers.explore import Scope, explore
    from fencepost.spec.checkers.shards import ShardWorkerDied

    monkeypatch.setattr(levels, "PARALLEL_MIN", 1)  # every level over the forked processes
    scope = Scope(tasks=2, capacity=1, horizon=1, priorities=(0,), max_attempts=(None,), durations=(1,))
    with pytest.raises(ShardWorkerDied, match="exit status 7"):
        explore(scope, _DiesInAFork(), jobs=2)


def _frozen_in_worker(_: int) -> int:
    import gc

    return gc.get_freeze_count()


def test_forked_workers_keep_the_parents_objects_out_of_their_collector_and_the_parent_does_not():
    import gc

    from fencepost.spec.checkers.shards import forked_pool

    held = [object() for _ in range(1000)]  # objects the workers inherit
    assert gc.get_freeze_count() == 0
    with forked_pool(2) as pool:
        assert gc.get_freeze_count() == 0, "the parent must collect its own garbage again at once"
        frozen = pool.map(_frozen_in_worker, range(2), chunksize=1)
    assert all(count >= len(held) for count in frozen), frozen
