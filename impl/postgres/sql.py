"""The SQL of ``PostgresScheduler``: tables and one PL/pgSQL function per protocol call.

Kept apart from ``impl/postgres/scheduler.py`` so the statements can be read in one
place. Every function body is written for one schema; ``schema_ddl(schema,
lock_key)`` fills the (already validated and quoted) schema name and the
schema's advisory-lock key in.

How calls serialise, in one paragraph. Two advisory locks per schema, both
taken for the transaction (released when it ends, after its changes became
visible): the *clock lock*, which every timed call holds, shared while its
``now`` equals the clock and exclusive when it moves the clock (a move also
ends every lease with ``expires_at <= now``, the contract's expiry, so no
lease is ever current past the clock and a call that does not move the
clock has nothing to expire); and the *dispatch lock*, exclusive, which
every dispatch holds while it picks the best waiting task (``FOR UPDATE SKIP
LOCKED``) and takes the next token from the ``issued`` row, so tokens,
claims and their visibility come in one order. Completions, failures,
renewals and cancels of different tasks do not wait for each other at all:
each is one ``UPDATE`` of its task's row whose ``WHERE`` re-checks the token
and the expiry (the fence is in the statement; ``impl/postgres/broken.py``
shows two writers that go wrong without it). Submits take the ``meta`` row's
lock for the id counter.

Why the locks cost no disk flush: a session runs with ``synchronous_commit =
off``, so a call's commit (and so the release of its locks) does not wait for
the disk; the client then runs ``fp_sync()``, a transaction of its own that
waits until the write-ahead log is on disk up to and including that commit,
before it returns the call's answer. Calls still wait for one flush each,
but no call holds a lock while it waits, so the flushes of many clients are
grouped (PostgreSQL's group commit) instead of queued.

Errors the contract calls invalid arguments are raised with SQLSTATE
``INVALID_ARGUMENT_STATE`` and a message in the model's words; the Python side
turns exactly those into ``ValueError``. A raise aborts the statement, and so
the call's whole transaction: nothing changes.
"""

from __future__ import annotations

#: SQLSTATE of an invalid-argument error raised by the functions below
#: (class "FP" is not used by PostgreSQL itself).
INVALID_ARGUMENT_STATE = "FP000"

#: Bumped when the tables or functions change; a schema made by another
#: version is refused (``ensure_schema`` raises, naming both versions).
SCHEMA_VERSION = 8  # 3: fp_prune and the batch procedures; 4: tokens from a counter row, not a sequence;
# 5: worker names and keys unique through hash indexes, so any the contract allows is stored;
# 6: a batch naming a pruned (forgotten) task is refused whole, as a single call naming it is;
# 7: with synchronous standbys every call waits until they have what it saw (_END, fp_settle);
# 8: fp_dispatch takes its token in its own statements (no SQL function planned again on every call)

#: A schema of an earlier version that opening upgrades in place, in the opening transaction: its
#: version -> the table statements that take it to the next version. Opening runs each step from
#: the schema's version on, then creates every function again (``CREATE OR REPLACE``) and sets the
#: version. Version 4's names and keys were btree primary keys, whose entries hold at most 2,704
#: bytes; version 5 makes them unique through hash indexes. Versions 6, 7 and 8 change functions only
#: (8: fp_take_token is gone).
UPGRADES = {
    4: """
ALTER TABLE {s}.workers DROP CONSTRAINT workers_pkey, ADD EXCLUDE USING hash (name WITH =);
ALTER TABLE {s}.keys DROP CONSTRAINT keys_pkey, ADD EXCLUDE USING hash (key WITH =);
DROP INDEX {s}.tasks_by_worker;
CREATE INDEX tasks_by_worker ON {s}.tasks USING hash (worker) WHERE status = 'running';
""",
    5: "",
    6: "",
    7: "DROP FUNCTION IF EXISTS {s}.fp_take_token();",
}

#: The second key of the two advisory locks (the first is the schema's ``lock_key``).
CLOCK_LOCK = 1
DISPATCH_LOCK = 2

_TABLES = """
CREATE TABLE IF NOT EXISTS {s}.meta (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),  -- exactly one row
    now         bigint NOT NULL DEFAULT 0,     -- the scheduler's clock; never decreases
    last_task   bigint NOT NULL DEFAULT 0,     -- ids issued so far (1..last_task; prune deletes, never reuses)
    epoch       timestamptz NOT NULL DEFAULT clock_timestamp(),  -- origin of DatabaseClock's ticks
    version     integer NOT NULL
);
-- Tokens issued so far, in a row rather than a sequence: a sequence skips values after a
-- server crash (it logs 32 ahead) and after a rolled-back dispatch (nextval is not undone), and
-- the contract's tokens are 1, 2, 3... without gaps. Taken only under the dispatch lock.
CREATE TABLE IF NOT EXISTS {s}.issued (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),  -- exactly one row
    last_token  bigint NOT NULL DEFAULT 0
);
INSERT INTO {s}.issued DEFAULT VALUES ON CONFLICT DO NOTHING;
-- the sequence the deliberately broken writers of impl/postgres/broken.py take tokens from
CREATE SEQUENCE IF NOT EXISTS {s}.tokens AS bigint MINVALUE 1;
-- Worker names and keys are unique through hash indexes (EXCLUDE USING hash ... WITH =), not
-- btrees: a btree entry holds at most 2,704 bytes, a name or key may have MAX_TEXT_BYTES (8,192).
CREATE TABLE IF NOT EXISTS {s}.workers (
    name        text NOT NULL,
    capacity    bigint NOT NULL CHECK (capacity >= 1),
    EXCLUDE USING hash (name WITH =)
);
CREATE TABLE IF NOT EXISTS {s}.tasks (
    id              bigint PRIMARY KEY,
    priority        bigint NOT NULL,
    due_at          bigint NOT NULL,
    max_attempts    bigint,                    -- NULL: unlimited
    retry_delay     bigint NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'retry_wait', 'succeeded', 'failed', 'cancelled')),
    attempts        bigint NOT NULL DEFAULT 0,
    worker          text,                      -- worker, token, started_at, expires_at:
    token           bigint UNIQUE,             --   set exactly while running
    started_at      bigint,
    expires_at      bigint,
    cancel_requested boolean NOT NULL DEFAULT false,  -- only ever true while running
    expired_token   bigint,                    -- the token whose lease expired last (lease_expired)
    ended_at        bigint,                    -- when it became final (prune forgets by it)
    CHECK ((status = 'running') = (token IS NOT NULL)),
    CHECK ((status = 'running') = (expires_at IS NOT NULL)),
    CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (ended_at IS NOT NULL))
);
-- dispatch order among waiting tasks
CREATE INDEX IF NOT EXISTS tasks_ready ON {s}.tasks (priority DESC, due_at, id)
    WHERE status IN ('pending', 'retry_wait');
-- the expiry sweep and each worker's load
CREATE INDEX IF NOT EXISTS tasks_running ON {s}.tasks (expires_at) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tasks_by_worker ON {s}.tasks USING hash (worker) WHERE status = 'running';
-- what prune forgets: final tasks by the time they ended
CREATE INDEX IF NOT EXISTS tasks_ended ON {s}.tasks (ended_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE TABLE IF NOT EXISTS {s}.keys (
    key             text NOT NULL,             -- remembered until prune forgets its task
    task_id         bigint NOT NULL,
    priority        bigint NOT NULL,           -- the other arguments exactly as given:
    due_at          bigint,                    --   NULL when due_at was not given
    max_attempts    bigint,
    retry_delay     bigint NOT NULL,
    EXCLUDE USING hash (key WITH =)
);
-- prune deletes a forgotten task's key by its task
CREATE INDEX IF NOT EXISTS keys_by_task ON {s}.keys (task_id);
INSERT INTO {s}.meta (version) VALUES ({version}) ON CONFLICT DO NOTHING;
"""

#: The start of every timed call, inlined into each function (a nested call
#: costs a statement of its own). Read the clock and, if ``p_now`` does not
#: move it, take the clock lock shared in the same statement (a dispatch also
#: takes the dispatch lock there: ``{also}``). If ``p_now`` moves it, take the
#: clock lock exclusively, move it (the WHERE re-checks against the newest
#: row) and end every lease with ``expires_at <= p_now``. A move may have
#: committed between the first read and a shared lock, so the call's main
#: statement checks ``p_now >= now`` again (it takes a fresh snapshot, after
#: the lock); until this call commits, no move can.
_BEGIN = """
    SELECT now, CASE WHEN p_now <= now THEN pg_advisory_xact_lock_shared({lk}, {clock_lock})::text{also} END
        INTO v_clock, v_locked FROM {s}.meta;
    IF p_now > v_clock THEN
        PERFORM pg_advisory_xact_lock({lk}, {clock_lock});
        v_hold := true;
        UPDATE {s}.meta SET now = p_now WHERE now <= p_now;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'time can''t go backwards: now=% < current time %', p_now, (SELECT now FROM {s}.meta)
                USING ERRCODE = '{err}';
        END IF;
        UPDATE {s}.tasks SET
            status = CASE WHEN cancel_requested THEN 'cancelled'
                          WHEN max_attempts IS NOT NULL AND attempts >= max_attempts THEN 'failed'
                          ELSE 'pending' END,
            ended_at = CASE WHEN cancel_requested OR (max_attempts IS NOT NULL AND attempts >= max_attempts)
                            THEN p_now END,
            expired_token = token,
            worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false
        WHERE status = 'running' AND expires_at <= p_now;
    END IF;
"""

#: What a call's main statement checks again, under the clock lock: time has not moved past ``p_now``.
_IN_TIME = "p_now >= (SELECT now FROM {s}.meta)"

#: Why a timed call's main statement changed nothing, when that is an error: time
#: moved past ``p_now`` after the first read (raised first, as the model does),
#: or, for a call about one task, its id was never issued.
_CHECK_TIME = """
        SELECT now, last_task INTO v_clock, v_last FROM {s}.meta;
        IF p_now < v_clock THEN
            RAISE EXCEPTION 'time can''t go backwards: now=% < current time %', p_now, v_clock
                USING ERRCODE = '{err}';
        END IF;
"""
_CHECK_TASK = _CHECK_TIME + """
        IF p_id < 1 OR p_id > v_last THEN
            IF v_last = 0 THEN
                RAISE EXCEPTION 'task_id % is unknown: no task has been submitted yet', p_id USING ERRCODE = '{err}';
            END IF;
            RAISE EXCEPTION 'task_id % is unknown: ids issued so far are 1..%', p_id, v_last USING ERRCODE = '{err}';
        END IF;
        PERFORM 1 FROM {s}.tasks WHERE id = p_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'task_id % was forgotten: it was final and pruned since (its id is never reused)', p_id
                USING ERRCODE = '{err}';
        END IF;
"""

#: What ``complete`` and ``fail`` answer after their fenced UPDATE: accepted if it
#: changed the row; else an error if time moved on or the id is unknown, else why not.
_FENCED_OUTCOME = """    accepted := FOUND;
    IF NOT accepted THEN
{check_task}
        reason := {s}.fp_rejection(p_id, p_token);
    END IF;
    v_wrote := accepted;"""

#: The end of every protocol procedure: the call's answer is in its OUT
#: parameters; make it durable without holding a lock while the disk works.
#: A call that holds a lock other calls queue on (``v_hold``: it moved the
#: clock, dispatched, or submitted) commits at once without waiting for the
#: disk, which releases the lock as it becomes visible; then, in a second
#: transaction, it writes one record and commits synchronously, so it returns
#: only once the log is on disk up to and past its first commit. A call that
#: held only shared or row locks commits synchronously itself (``v_wrote``), or,
#: having written nothing, writes the record if anything it may have seen is
#: not yet on disk. With synchronous standbys (``synchronous_standby_names``) the record is
#: written whether or not the local disk has everything: its commit waits until the standbys
#: have the log up to it, so a failover to one of them never undoes an acknowledged call (a
#: commit flushed locally -- by the WAL writer, or another client's commit -- may not be on a
#: standby yet). With ``synchronous_commit = off`` for the session (the
#: scheduler's ``synchronous_commit=False``) nothing waits for the disk.
_END = """
    IF v_hold THEN
        PERFORM set_config('synchronous_commit', 'off', true);
        COMMIT;
        v_wrote := false;
    END IF;
    IF NOT v_wrote AND current_setting('synchronous_commit') <> 'off'
       AND (pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn()
            OR current_setting('synchronous_standby_names') <> '') THEN
        PERFORM pg_logical_emit_message(true, 'fencepost', '');
    END IF;
"""

#: What an accepted ``fail`` sets: cancelled, failed, or retry_wait after the backoff (one copy for
#: the batch; the single ``fp_fail`` spells the same).
_FAIL_SET = """
                status = CASE WHEN t.cancel_requested THEN 'cancelled'
                              WHEN t.max_attempts IS NOT NULL AND t.attempts >= t.max_attempts THEN 'failed'
                              ELSE 'retry_wait' END,
                due_at = CASE WHEN t.cancel_requested OR (t.max_attempts IS NOT NULL AND t.attempts >= t.max_attempts)
                              THEN t.due_at
                              ELSE (p_now + t.retry_delay * power(2::numeric, t.attempts - 1))::bigint END,
                worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false,
                ended_at = CASE WHEN t.cancel_requested OR (t.max_attempts IS NOT NULL AND t.attempts >= t.max_attempts)
                                THEN p_now END"""

#: The start of ``complete_many``/``fail_many`` after the clock: time has not moved past ``p_now``,
#: every id was issued and not pruned since (else the whole batch is invalid, named at its first bad report), whether the ids are distinct, and the rows
#: the reports may change locked in id order (the single calls' row locks, taken in one order).
_CHECK_REPORTS = """
    v_n := coalesce(cardinality(p_ids), 0);
    SELECT m.now, m.last_task,
           (SELECT min(n) - 1 FROM unnest(p_ids) WITH ORDINALITY AS u(id, n)
             WHERE id < 1 OR id > m.last_task OR NOT EXISTS (SELECT 1 FROM {s}.tasks t WHERE t.id = u.id)),
           (SELECT count(DISTINCT id) FROM unnest(p_ids) AS u(id)) = v_n
        INTO v_clock, v_last, v_bad, v_distinct FROM {s}.meta m;
    IF p_now < v_clock THEN
        RAISE EXCEPTION 'time can''t go backwards: now=% < current time %', p_now, v_clock USING ERRCODE = '{err}';
    END IF;
    IF v_bad IS NOT NULL THEN
        IF p_ids[v_bad + 1] BETWEEN 1 AND v_last THEN  -- issued, and its row is gone: prune deleted it
            RAISE EXCEPTION 'reports[%]: task_id % was forgotten: it was final and pruned since (its id is never reused) (nothing in the batch was done)',
                v_bad, p_ids[v_bad + 1] USING ERRCODE = '{err}';
        END IF;
        IF v_last = 0 THEN
            RAISE EXCEPTION 'reports[%]: task_id % is unknown: no task has been submitted yet (nothing in the batch was done)',
                v_bad, p_ids[v_bad + 1] USING ERRCODE = '{err}';
        END IF;
        RAISE EXCEPTION 'reports[%]: task_id % is unknown: ids issued so far are 1..% (nothing in the batch was done)',
            v_bad, p_ids[v_bad + 1], v_last USING ERRCODE = '{err}';
    END IF;
    PERFORM 1 FROM {s}.tasks t WHERE t.status = 'running' AND (t.id, t.token) IN (SELECT * FROM unnest(p_ids, p_tokens))
        ORDER BY t.id FOR UPDATE;
"""

#: The outcomes of distinct reports, after the ``done`` statement: accepted where it changed the row,
#: else the rejection's reason.
_DISTINCT_OUTCOMES = """        SELECT coalesce(array_agg(d.id IS NOT NULL ORDER BY u.n), '{}'),
               coalesce(array_agg(CASE WHEN d.id IS NULL THEN {s}.fp_rejection(u.id, u.token) END ORDER BY u.n), '{}')
            INTO o_accepted, o_reasons
            FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS u(id, token, n) LEFT JOIN done d ON d.id = u.id;"""

#: One report's outcome in the loop, after its fenced UPDATE.
_LOOP_OUTCOME = """            o_accepted := o_accepted || FOUND;
            o_reasons := o_reasons || CASE WHEN FOUND THEN NULL ELSE {s}.fp_rejection(p_ids[i], p_tokens[i]) END;"""

#: ``complete_many`` and ``fail_many``, one template: ``{name}`` is the procedure, ``{set}`` what an
#: accepted report sets (``{succeeded}`` for complete, ``_FAIL_SET`` for fail).
_REPORT_BATCH = """CREATE OR REPLACE PROCEDURE {s}.{name}(p_ids bigint[], p_tokens bigint[], p_now bigint,
                                             OUT o_accepted boolean[], OUT o_reasons text[])
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean;
        v_n integer; v_distinct boolean; v_bad bigint;
BEGIN
    o_accepted := '{}';
    o_reasons := '{}';
{begin}
{check_reports}
    IF v_distinct THEN
        WITH done AS (
            UPDATE {s}.tasks t SET {set}
            FROM unnest(p_ids, p_tokens) AS u(id, token)
            WHERE t.id = u.id AND t.status = 'running' AND t.token = u.token AND t.expires_at > p_now
            RETURNING t.id)
{distinct_outcomes}
    ELSE
        FOR i IN 1 .. v_n LOOP
            UPDATE {s}.tasks t SET {set}
            WHERE t.id = p_ids[i] AND t.status = 'running' AND t.token = p_tokens[i] AND t.expires_at > p_now;
{loop_outcome}
        END LOOP;
    END IF;
    v_wrote := true = ANY(o_accepted);
{end}
END $$;
"""

#: What an accepted ``complete`` sets.
_COMPLETE_SET = "status = 'succeeded',\n                worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false, ended_at = p_now"

_FUNCTIONS = r"""
-- Why p_token may not act on task p_id now (NULL: it holds the current lease).
CREATE OR REPLACE FUNCTION {s}.fp_rejection(p_id bigint, p_token bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN status = 'running' THEN CASE WHEN token = p_token THEN NULL ELSE 'stale_token' END
        WHEN expired_token = p_token THEN 'lease_expired'
        WHEN status IN ('succeeded', 'failed', 'cancelled') THEN 'already_final'
        ELSE 'not_running' END
    FROM {s}.tasks WHERE id = p_id
$$;

-- For reads (and raised calls): make the reading transaction wait, at its commit, until the log
-- is on disk up to everything it may have seen. A call that dispatched, submitted or moved the
-- clock is visible before its flush (see _END), so without this a read could report a change a
-- server crash then undoes. Writes one record only when something is not yet on disk, or, with
-- synchronous standbys, always: a record on the local disk may not be on a standby yet, and a
-- failover to that standby would undo what the read reported (tests/implementations/test_postgres_failover.py).
CREATE OR REPLACE FUNCTION {s}.fp_settle() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('synchronous_commit') <> 'off'
       AND (pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn()
            OR current_setting('synchronous_standby_names') <> '') THEN
        PERFORM pg_logical_emit_message(true, 'fencepost', '');
    END IF;
END $$;

-- Untimed; needs no lock of its own: the names' unique index decides a race between two adds.
CREATE OR REPLACE FUNCTION {s}.fp_add_worker(p_worker text, p_capacity bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.workers (name, capacity) VALUES (p_worker, p_capacity) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'worker % already exists', quote_literal(p_worker) USING ERRCODE = '{err}';
    END IF;
END $$;

-- Untimed: takes the meta row's lock for the id counter (and to read the key table after it).
CREATE OR REPLACE PROCEDURE {s}.fp_submit(
    p_priority bigint, p_due_at bigint, p_max_attempts bigint, p_retry_delay bigint, p_key text,
    OUT o_id bigint
)
LANGUAGE plpgsql AS $$
DECLARE v_now bigint; k record; v_hold boolean := true; v_wrote boolean := true;
BEGIN
    IF p_key IS NOT NULL THEN
        PERFORM 1 FROM {s}.meta FOR UPDATE;
        SELECT * INTO k FROM {s}.keys WHERE key = p_key;
        IF FOUND THEN
            IF k.priority = p_priority AND k.due_at IS NOT DISTINCT FROM p_due_at
               AND k.max_attempts IS NOT DISTINCT FROM p_max_attempts AND k.retry_delay = p_retry_delay THEN
                o_id := k.task_id;  -- a duplicate: the first id, nothing changes
                RETURN;
            END IF;
            RAISE EXCEPTION 'key % was already used for task % with other arguments: first (priority=%, due_at=%, max_attempts=%, retry_delay=%), now (priority=%, due_at=%, max_attempts=%, retry_delay=%)',
                quote_literal(p_key), k.task_id,
                k.priority, coalesce(k.due_at::text, 'None'), coalesce(k.max_attempts::text, 'None'), k.retry_delay,
                p_priority, coalesce(p_due_at::text, 'None'), coalesce(p_max_attempts::text, 'None'), p_retry_delay
                USING ERRCODE = '{err}';
        END IF;
    END IF;
    UPDATE {s}.meta SET last_task = last_task + 1 RETURNING last_task, now INTO o_id, v_now;
    INSERT INTO {s}.tasks (id, priority, due_at, max_attempts, retry_delay)
        VALUES (o_id, p_priority, coalesce(p_due_at, v_now), p_max_attempts, p_retry_delay);
    IF p_key IS NOT NULL THEN
        INSERT INTO {s}.keys VALUES (p_key, o_id, p_priority, p_due_at, p_max_attempts, p_retry_delay);
    END IF;
{end}
END $$;

-- The claim: under the dispatch lock, the best waiting task that is due, locked with SKIP
-- LOCKED (a row another call is changing right now, e.g. a cancel, is that call's), leased
-- under the next token, if the worker has a free slot. The token is the counter row's next value,
-- and the row is moved to it only when the UPDATE leased a task (in the same transaction, so undone
-- with it): a dispatch that leases nothing takes no token. Nobody else reads or moves the counter
-- meanwhile: every taker holds the dispatch lock. (Not a SQL function called from the UPDATE: PostgreSQL
-- plans such a function's body again on every call, which cost a dispatch more than its own UPDATE.)
CREATE OR REPLACE PROCEDURE {s}.fp_dispatch(p_worker text, p_now bigint, p_duration bigint,
                                            OUT o_task bigint, OUT o_token bigint)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := true; v_wrote boolean := false;
BEGIN
{begin_dispatch}
    IF v_locked IS NULL THEN
        PERFORM pg_advisory_xact_lock({lk}, {dispatch_lock});  -- after the clock lock, as above
    END IF;
    UPDATE {s}.tasks t SET
        status = 'running', attempts = t.attempts + 1, worker = p_worker, token = (SELECT last_token + 1 FROM {s}.issued),
        started_at = p_now, expires_at = p_now + p_duration, expired_token = NULL
    WHERE t.id = (SELECT id FROM {s}.tasks
                  WHERE status IN ('pending', 'retry_wait') AND due_at <= p_now
                  ORDER BY priority DESC, due_at, id
                  LIMIT 1
                  FOR UPDATE SKIP LOCKED)
      AND t.status IN ('pending', 'retry_wait')
      AND {in_time}
      AND (SELECT count(*) FROM {s}.tasks WHERE status = 'running' AND worker = p_worker)
          < (SELECT capacity FROM {s}.workers WHERE name = p_worker)
    RETURNING t.id, t.token INTO o_task, o_token;
    IF FOUND THEN
        UPDATE {s}.issued SET last_token = o_token;
    ELSE  -- full, or nothing due, unless one of these
{check_time}
        PERFORM 1 FROM {s}.workers WHERE name = p_worker;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'worker % is unknown: add it with add_worker first', quote_literal(p_worker)
                USING ERRCODE = '{err}';
        END IF;
    END IF;
{end}
END $$;

-- complete, fail and renew: one UPDATE each, fenced by token AND expiry in its WHERE.
CREATE OR REPLACE PROCEDURE {s}.fp_complete(p_id bigint, p_token bigint, p_now bigint,
                                            OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean;
BEGIN
{begin}
    UPDATE {s}.tasks SET status = 'succeeded', ended_at = p_now,
        worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false
    WHERE id = p_id AND status = 'running' AND token = p_token AND expires_at > p_now AND {in_time};
{fenced_outcome}
{end}
END $$;

CREATE OR REPLACE PROCEDURE {s}.fp_fail(p_id bigint, p_token bigint, p_now bigint,
                                        OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean;
BEGIN
{begin}
    UPDATE {s}.tasks SET
        status = CASE WHEN cancel_requested THEN 'cancelled'
                      WHEN max_attempts IS NOT NULL AND attempts >= max_attempts THEN 'failed'
                      ELSE 'retry_wait' END,
        due_at = CASE WHEN cancel_requested OR (max_attempts IS NOT NULL AND attempts >= max_attempts) THEN due_at
                      ELSE (p_now + retry_delay * power(2::numeric, attempts - 1))::bigint END,
        ended_at = CASE WHEN cancel_requested OR (max_attempts IS NOT NULL AND attempts >= max_attempts) THEN p_now END,
        worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false
    WHERE id = p_id AND status = 'running' AND token = p_token AND expires_at > p_now AND {in_time};
{fenced_outcome}
{end}
END $$;

CREATE OR REPLACE PROCEDURE {s}.fp_renew(p_id bigint, p_token bigint, p_now bigint, p_duration bigint,
                                         OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean;
BEGIN
{begin}
    UPDATE {s}.tasks SET expires_at = p_now + p_duration
    WHERE id = p_id AND status = 'running' AND token = p_token AND expires_at > p_now
      AND NOT cancel_requested AND {in_time};
    accepted := FOUND;
    IF NOT accepted THEN
{check_task}
        reason := coalesce({s}.fp_rejection(p_id, p_token), 'cancel_requested');
    END IF;
    v_wrote := accepted;
{end}
END $$;

-- cancel: one UPDATE; a waiting task ends cancelled, a running one is asked to stop.
CREATE OR REPLACE PROCEDURE {s}.fp_cancel(p_id bigint, p_now bigint, OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean;
BEGIN
{begin}
    UPDATE {s}.tasks SET
        cancel_requested = (status = 'running'),
        status = CASE WHEN status = 'running' THEN 'running' ELSE 'cancelled' END,
        ended_at = CASE WHEN status = 'running' THEN NULL ELSE p_now END
    WHERE id = p_id AND status NOT IN ('succeeded', 'failed', 'cancelled') AND {in_time};
    accepted := FOUND;
    IF NOT accepted THEN
{check_task}
        reason := 'already_final';
    END IF;
    v_wrote := accepted;
{end}
END $$;

-- The batches: one CALL, one transaction, one durable commit for the whole batch. Each is the
-- single calls it stands for, in order; a raise anywhere aborts the transaction, so an invalid
-- batch changes nothing (all or nothing).

-- submit_many: the columns of the entries, one array each (p_key NULL when no entry has a key).
-- Without keys, one UPDATE takes all the ids and one INSERT makes the tasks; with keys, the single
-- submit's steps for each entry in order, so a key given twice in a batch names the first's task.
CREATE OR REPLACE PROCEDURE {s}.fp_submit_many(
    p_priority bigint[], p_due_at bigint[], p_max_attempts bigint[], p_retry_delay bigint[], p_key text[],
    OUT o_ids bigint[]
)
LANGUAGE plpgsql AS $$
DECLARE v_now bigint; v_first bigint; v_n integer := coalesce(cardinality(p_priority), 0); k record; v_id bigint;
        v_hold boolean := true; v_wrote boolean := true;
BEGIN
    IF v_n = 0 THEN
        o_ids := '{}';
        RETURN;
    END IF;
    IF p_key IS NULL THEN
        UPDATE {s}.meta SET last_task = last_task + v_n RETURNING last_task - v_n, now INTO v_first, v_now;
        INSERT INTO {s}.tasks (id, priority, due_at, max_attempts, retry_delay)
            SELECT v_first + i, p_priority[i], coalesce(p_due_at[i], v_now), p_max_attempts[i], p_retry_delay[i]
            FROM generate_series(1, v_n) i;
        o_ids := ARRAY(SELECT v_first + i FROM generate_series(1, v_n) i);
    ELSE
        PERFORM 1 FROM {s}.meta FOR UPDATE;
        o_ids := '{}';
        FOR i IN 1 .. v_n LOOP
            IF p_key[i] IS NOT NULL THEN
                SELECT * INTO k FROM {s}.keys WHERE key = p_key[i];
                IF FOUND THEN
                    IF k.priority = p_priority[i] AND k.due_at IS NOT DISTINCT FROM p_due_at[i]
                       AND k.max_attempts IS NOT DISTINCT FROM p_max_attempts[i] AND k.retry_delay = p_retry_delay[i] THEN
                        o_ids := o_ids || k.task_id;  -- a duplicate: the first id, nothing changes
                        CONTINUE;
                    END IF;
                    RAISE EXCEPTION 'tasks[%]: key % was already used for task % with other arguments: first (priority=%, due_at=%, max_attempts=%, retry_delay=%), now (priority=%, due_at=%, max_attempts=%, retry_delay=%) (nothing in the batch was done)',
                        i - 1, quote_literal(p_key[i]), k.task_id,
                        k.priority, coalesce(k.due_at::text, 'None'), coalesce(k.max_attempts::text, 'None'), k.retry_delay,
                        p_priority[i], coalesce(p_due_at[i]::text, 'None'), coalesce(p_max_attempts[i]::text, 'None'), p_retry_delay[i]
                        USING ERRCODE = '{err}';
                END IF;
            END IF;
            UPDATE {s}.meta SET last_task = last_task + 1 RETURNING last_task, now INTO v_id, v_now;
            INSERT INTO {s}.tasks (id, priority, due_at, max_attempts, retry_delay)
                VALUES (v_id, p_priority[i], coalesce(p_due_at[i], v_now), p_max_attempts[i], p_retry_delay[i]);
            IF p_key[i] IS NOT NULL THEN
                INSERT INTO {s}.keys VALUES (p_key[i], v_id, p_priority[i], p_due_at[i], p_max_attempts[i], p_retry_delay[i]);
            END IF;
            o_ids := o_ids || v_id;
        END LOOP;
    END IF;
{end}
END $$;

-- dispatch_many: the single dispatch's locks, then up to min(limit, the worker's free slots) of the
-- best waiting tasks that are due, claimed with SKIP LOCKED in one statement, and one token each
-- from the sequence in dispatch order (under the dispatch lock nobody else takes tokens).
CREATE OR REPLACE PROCEDURE {s}.fp_dispatch_many(p_worker text, p_now bigint, p_duration bigint, p_limit bigint,
                                                 OUT o_tasks bigint[], OUT o_tokens bigint[])
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := true; v_wrote boolean := false;
        v_room bigint;
BEGIN
{begin_dispatch}
    IF v_locked IS NULL THEN
        PERFORM pg_advisory_xact_lock({lk}, {dispatch_lock});  -- after the clock lock, as above
    END IF;
    -- time has not moved past p_now since the first read (as _CHECK_TIME), and the worker's free slots
    SELECT m.now, w.capacity - (SELECT count(*) FROM {s}.tasks WHERE status = 'running' AND worker = p_worker)
        INTO v_clock, v_room FROM {s}.meta m LEFT JOIN {s}.workers w ON w.name = p_worker;
    IF p_now < v_clock THEN
        RAISE EXCEPTION 'time can''t go backwards: now=% < current time %', p_now, v_clock USING ERRCODE = '{err}';
    END IF;
    IF v_room IS NULL THEN
        RAISE EXCEPTION 'worker % is unknown: add it with add_worker first', quote_literal(p_worker)
            USING ERRCODE = '{err}';
    END IF;
    o_tasks := '{}';
    o_tokens := '{}';
    IF least(v_room, p_limit) > 0 THEN
        -- one statement: claim, number in dispatch order, one token each in that order, lease
        WITH picked AS (
            SELECT id, priority, due_at FROM {s}.tasks
            WHERE status IN ('pending', 'retry_wait') AND due_at <= p_now
            ORDER BY priority DESC, due_at, id
            LIMIT least(v_room, p_limit)
            FOR UPDATE SKIP LOCKED),
        numbered AS (SELECT id, row_number() OVER (ORDER BY priority DESC, due_at, id) AS n FROM picked),
        -- the tokens come from the same counter row as a single dispatch's, in one step
        bump AS (UPDATE {s}.issued SET last_token = last_token + (SELECT count(*) FROM picked)
                 WHERE (SELECT count(*) FROM picked) > 0 RETURNING last_token),
        tokens AS (SELECT n, (SELECT last_token FROM bump) - (SELECT count(*) FROM picked) + n AS token
                   FROM generate_series(1, (SELECT count(*) FROM picked)) AS n),
        leased AS (
            UPDATE {s}.tasks t SET
                status = 'running', attempts = t.attempts + 1, worker = p_worker, token = k.token,
                started_at = p_now, expires_at = p_now + p_duration, expired_token = NULL
            FROM numbered p JOIN tokens k ON k.n = p.n
            WHERE t.id = p.id
            RETURNING t.id, t.token)
        SELECT coalesce(array_agg(id ORDER BY token), '{}'), coalesce(array_agg(token ORDER BY token), '{}')
            INTO o_tasks, o_tokens FROM leased;
    END IF;
{end}
END $$;

-- complete_many and fail_many: the single call's fenced UPDATE for every report, as one statement
-- when the ids are distinct (else one per report, in order, so a later report sees an earlier one's
-- change). The rows to change are locked first in id order, so two batches never deadlock.
{report_batches}
CREATE OR REPLACE PROCEDURE {s}.fp_advance(p_now bigint)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean := false;
BEGIN
{begin}
    IF NOT v_hold THEN
{check_time}
    END IF;
{end}
END $$;

-- prune: under the clock lock (shared: every call at this time ends its tasks at p_now >= p_before,
-- so none of them is among the rows deleted), delete the final tasks that ended before p_before
-- and their keys. Ids (meta.last_task) and tokens (the sequence) are counters apart: never reused.
CREATE OR REPLACE PROCEDURE {s}.fp_prune(p_before bigint, p_now bigint, OUT o_count bigint)
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean := false; v_wrote boolean := false;
BEGIN
{begin}
    IF NOT v_hold THEN
{check_time}
    END IF;
    DELETE FROM {s}.keys WHERE task_id IN (
        SELECT id FROM {s}.tasks WHERE status IN ('succeeded', 'failed', 'cancelled') AND ended_at < p_before);
    DELETE FROM {s}.tasks WHERE status IN ('succeeded', 'failed', 'cancelled') AND ended_at < p_before;
    GET DIAGNOSTICS o_count = ROW_COUNT;
    v_wrote := o_count > 0;
{end}
END $$;

-- The start of a timed call, alone, for the broken schedulers in impl/postgres/broken.py
-- (functions: they run inside the caller's transaction).
CREATE OR REPLACE FUNCTION {s}.fp_begin(p_now bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean;
BEGIN
{begin}
{check_time}
END $$;

CREATE OR REPLACE FUNCTION {s}.fp_begin_task(p_id bigint, p_now bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE v_clock bigint; v_last bigint; v_locked text; v_hold boolean;
BEGIN
{begin}
{check_task}
END $$;
"""


def schema_ddl(schema: str, lock_key: int) -> str:
    """Every statement that creates ``schema``'s tables and functions (idempotent).

    ``schema`` must already be a validated, double-quoted identifier;
    ``lock_key`` is the schema's advisory-lock key, a 32-bit signed int
    (``impl.postgres.lock_key``).
    """
    tables = _TABLES.format(s=schema, version=SCHEMA_VERSION)
    reports = "\n".join(_REPORT_BATCH.replace("{name}", name).replace("{set}", changes)
                         for name, changes in (("fp_complete_many", _COMPLETE_SET), ("fp_fail_many", _FAIL_SET)))
    dispatch_also = " || pg_advisory_xact_lock({lk}, {dispatch_lock})::text"
    functions = (
        _FUNCTIONS.replace("{report_batches}", reports).replace("{begin_dispatch}", _BEGIN.replace("{also}", dispatch_also))
        .replace("{begin}", _BEGIN.replace("{also}", ""))
        .replace("{fenced_outcome}", _FENCED_OUTCOME)
        .replace("{check_task}", _CHECK_TASK)
        .replace("{check_time}", _CHECK_TIME)
        .replace("{in_time}", _IN_TIME)
        .replace("{end}", _END)
    )
    functions = (
        functions.replace("{check_reports}", _CHECK_REPORTS)
        .replace("{distinct_outcomes}", _DISTINCT_OUTCOMES)
        .replace("{loop_outcome}", _LOOP_OUTCOME)
        .replace("{fail_set}", _FAIL_SET)
    )
    for name, value in (("{s}", schema), ("{err}", INVALID_ARGUMENT_STATE), ("{lk}", str(int(lock_key))),
                        ("{clock_lock}", str(CLOCK_LOCK)), ("{dispatch_lock}", str(DISPATCH_LOCK))):
        functions = functions.replace(name, value)
    return tables + functions
