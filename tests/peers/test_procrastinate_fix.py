"""The fix docs/findings.md suggests for procrastinate 3.10 (PR1), tried: compare worker_id, and the check passes.

In a schema of its own, ``procrastinate_finish_job_v1`` and
``procrastinate_retry_job_v2`` get an overload that takes the worker id and
updates only ``WHERE status = 'doing' AND worker_id = p_worker_id``; an
adapter that passes the token's worker id to them (``FixedQueue``) is then
checked as the shipped one is, with the same budget that finds PR1 in the
shipped one (tests/peers/test_peers_check.py), and replays PR1's scenario
without a mismatch. With the fix a late finish of a job put back in 'todo'
is refused too, so the fixed queue declares the contract's ``late=refuse``.
"""

from __future__ import annotations

import tomllib

from fencepost.cli import main
from peers_env import FIXED_BUDGET, SCENARIOS, SERVER_CALL_TIMEOUT, replay_on_queue, require

#: The schema the patched functions live in: never the shipped adapter's, which other tests share.
FIXED_SCHEMA = "fp_peers_procr_fixed_{pid}"

#: The suggested fix, as overloads taking the worker id (procrastinate's Python side would pass job.worker_id).
PATCH = """
CREATE FUNCTION {schema}.procrastinate_finish_job_v1(job_id bigint, end_status procrastinate_job_status,
                                                      delete_job boolean, p_worker_id bigint)
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    _job_id bigint;
BEGIN
    UPDATE procrastinate_jobs
    SET status = end_status, abort_requested = false, attempts = attempts + 1
    WHERE id = job_id AND status = 'doing' AND worker_id = p_worker_id
    RETURNING id INTO _job_id;
    IF _job_id IS NULL THEN
        RAISE 'Job was not found or not in "doing" status under worker % (job id: %)', p_worker_id, job_id;
    END IF;
END;
$$;
CREATE FUNCTION {schema}.procrastinate_retry_job_v2(job_id bigint, retry_at timestamp with time zone,
                                                     p_worker_id bigint)
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    _job_id bigint;
BEGIN
    UPDATE procrastinate_jobs
    SET status = 'todo', attempts = attempts + 1, scheduled_at = retry_at
    WHERE id = job_id AND status = 'doing' AND worker_id = p_worker_id
    RETURNING id INTO _job_id;
    IF _job_id IS NULL THEN
        RAISE 'Job was not found or not in "doing" status under worker % (job id: %)', p_worker_id, job_id;
    END IF;
END;
$$;
"""


_PATCHED: set[str] = set()  # the schemas patched in this process (dropped with the others by uninstall)


def fixed_schema() -> str:
    import os

    return FIXED_SCHEMA.format(pid=os.getpid())


def install_fixed() -> None:
    import psycopg

    from fencepost.impl.peers import procrastinate

    schema = fixed_schema()
    if schema in _PATCHED:
        return
    procrastinate.install(schema)
    with psycopg.connect(procrastinate.dsn(), autocommit=True) as connection:
        connection.execute(f"SET search_path = {schema}, pg_catalog, public")
        connection.execute(PATCH.format(schema=schema))
    _PATCHED.add(schema)


def fixed() -> object:
    """The shipped adapter on the patched functions: finish and stalled-retry pass the worker id."""
    from fencepost.impl.peers import procrastinate

    class FixedQueue(procrastinate.ProcrastinateQueue):
        def _retry_stalled(self, job, now):
            self._run(self._connector.execute_query_async(
                "SELECT procrastinate_retry_job_v2(%(job)s, %(at)s, %(worker)s)",
                job=job.id, at=procrastinate.moment(now), worker=job.worker_id))

        def _finish(self, job_id, worker_id):
            self._run(self._connector.execute_query_async(
                "SELECT procrastinate_finish_job_v1(%(job)s, 'succeeded', false, %(worker)s)",
                job=job_id, worker=worker_id))

    install_fixed()
    return FixedQueue(fixed_schema())


def _declare() -> None:
    from fencepost.impl.peers.procrastinate import queue

    variants = dict(queue.fencepost_variants)
    del variants["late"]  # with the fix a late finish is refused: the contract's late=refuse
    fixed.fencepost_variants = variants


_declare()


def test_the_fixed_functions_refuse_the_zombies_finish_and_take_the_holders() -> None:
    require("procrastinate")
    with (SCENARIOS / "procrastinate_zombie_finishes.toml").open("rb") as handle:
        scenario = tomllib.load(handle)
    scenario["meta"]["impl"] = "test_procrastinate_fix:fixed"
    assert replay_on_queue(scenario) == []


def test_the_check_passes_on_the_fixed_functions_with_more_runs_than_finding_the_bug_takes(capsys) -> None:
    require("procrastinate")
    status = main(["check", "test_procrastinate_fix:fixed", "--max-examples", FIXED_BUDGET, "--jobs", "1",
                   "--call-timeout", SERVER_CALL_TIMEOUT])  # as test_peers_check
    out = capsys.readouterr().out
    assert status == 0, out
    assert "test_procrastinate_fix:fixed conforms" in out, out
