"""The SQL of ``PostgresScheduler``: tables and one PL/pgSQL function per protocol call.

Kept apart from ``impl/postgres.py`` so the statements can be read in one
place. Every function body is written for one schema; ``schema_ddl(schema)``
fills the (already validated and quoted) schema name in.

How the functions serialise, in one paragraph: every mutating call starts by
locking the single ``meta`` row (``SELECT ... FOR UPDATE``), which holds the
scheduler's clock, the last token and the last task id. The call then checks
time (never backwards), ends every lease with ``expires_at <= now`` (the
contract's expiry, done eagerly, under the same lock), makes its change and
commits; the row lock is released at commit. So the global token counter, the
id counter, the clock and the per-worker loads change in one total order,
which is the order the contract is written in. Inside that, the claim still
uses ``FOR UPDATE SKIP LOCKED`` and every completion, failure and renewal is one
``UPDATE`` whose ``WHERE`` re-checks the token and the expiry: those are what
keep the fence even for a writer that does not take the ``meta`` lock (see
``impl/postgres_broken.py`` for two that go wrong without them).

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
#: version is re-created in place (functions) or refused (tables).
SCHEMA_VERSION = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS {s}.meta (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),  -- exactly one row
    now         bigint NOT NULL DEFAULT 0,     -- the scheduler's clock; never decreases
    last_token  bigint NOT NULL DEFAULT 0,     -- tokens issued so far; the next is last_token + 1
    last_task   bigint NOT NULL DEFAULT 0,     -- ids issued so far (ids are 1..last_task, no gaps)
    epoch       timestamptz NOT NULL DEFAULT clock_timestamp(),  -- origin of DatabaseClock's ticks
    version     integer NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.workers (
    name        text PRIMARY KEY,
    capacity    bigint NOT NULL CHECK (capacity >= 1)
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
    CHECK ((status = 'running') = (token IS NOT NULL)),
    CHECK ((status = 'running') = (expires_at IS NOT NULL))
);
-- dispatch order among waiting tasks
CREATE INDEX IF NOT EXISTS tasks_ready ON {s}.tasks (priority DESC, due_at, id)
    WHERE status IN ('pending', 'retry_wait');
-- the expiry sweep and each worker's load
CREATE INDEX IF NOT EXISTS tasks_running ON {s}.tasks (expires_at) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tasks_by_worker ON {s}.tasks (worker) WHERE status = 'running';
CREATE TABLE IF NOT EXISTS {s}.keys (
    key             text PRIMARY KEY,          -- remembered for the scheduler's whole life
    task_id         bigint NOT NULL,
    priority        bigint NOT NULL,           -- the other arguments exactly as given:
    due_at          bigint,                    --   NULL when due_at was not given
    max_attempts    bigint,
    retry_delay     bigint NOT NULL
);
INSERT INTO {s}.meta (version) VALUES ({version}) ON CONFLICT DO NOTHING;
"""

#: The start of every timed call, inlined into each function (a nested call
#: costs a statement of its own): lock the clock row and move it to ``p_now``
#: in one statement that also checks time never goes backwards (under READ
#: COMMITTED the WHERE is re-checked against the newest row once the lock is
#: ours), then end every lease with ``expires_at <= p_now``. Every later
#: statement of the call takes a fresh snapshot, so it sees every call that
#: committed before this one got the lock.
_BEGIN = """
    UPDATE {s}.meta SET now = p_now WHERE now <= p_now RETURNING last_token, last_task INTO v_token, v_last;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'time can''t go backwards: now=% < current time %', p_now, (SELECT now FROM {s}.meta)
            USING ERRCODE = '{err}';
    END IF;
    UPDATE {s}.tasks SET
        status = CASE WHEN cancel_requested THEN 'cancelled'
                      WHEN max_attempts IS NOT NULL AND attempts >= max_attempts THEN 'failed'
                      ELSE 'pending' END,
        expired_token = token,
        worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false
    WHERE status = 'running' AND expires_at <= p_now;
"""

#: ``_BEGIN`` for a call about one task: the id must have been issued.
_BEGIN_TASK = _BEGIN + """
    IF p_id < 1 OR p_id > v_last THEN
        IF v_last = 0 THEN
            RAISE EXCEPTION 'task_id % is unknown: no task has been submitted yet', p_id USING ERRCODE = '{err}';
        END IF;
        RAISE EXCEPTION 'task_id % is unknown: ids issued so far are 1..%', p_id, v_last USING ERRCODE = '{err}';
    END IF;
"""

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

-- Untimed; needs no lock of its own: the name's primary key decides a race between two adds.
CREATE OR REPLACE FUNCTION {s}.fp_add_worker(p_worker text, p_capacity bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.workers (name, capacity) VALUES (p_worker, p_capacity) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'worker % already exists', quote_literal(p_worker) USING ERRCODE = '{err}';
    END IF;
END $$;

-- Untimed: takes the clock row's lock for the id counter (and to read the key table after it).
CREATE OR REPLACE FUNCTION {s}.fp_submit(
    p_priority bigint, p_due_at bigint, p_max_attempts bigint, p_retry_delay bigint, p_key text
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_now bigint; v_id bigint; k record;
BEGIN
    IF p_key IS NOT NULL THEN
        PERFORM 1 FROM {s}.meta FOR UPDATE;
        SELECT * INTO k FROM {s}.keys WHERE key = p_key;
        IF FOUND THEN
            IF k.priority = p_priority AND k.due_at IS NOT DISTINCT FROM p_due_at
               AND k.max_attempts IS NOT DISTINCT FROM p_max_attempts AND k.retry_delay = p_retry_delay THEN
                RETURN k.task_id;  -- a duplicate: the first id, nothing changes
            END IF;
            RAISE EXCEPTION 'key % was already used for task % with other arguments: first (priority=%, due_at=%, max_attempts=%, retry_delay=%), now (priority=%, due_at=%, max_attempts=%, retry_delay=%)',
                quote_literal(p_key), k.task_id,
                k.priority, coalesce(k.due_at::text, 'None'), coalesce(k.max_attempts::text, 'None'), k.retry_delay,
                p_priority, coalesce(p_due_at::text, 'None'), coalesce(p_max_attempts::text, 'None'), p_retry_delay
                USING ERRCODE = '{err}';
        END IF;
    END IF;
    UPDATE {s}.meta SET last_task = last_task + 1 RETURNING last_task, now INTO v_id, v_now;
    INSERT INTO {s}.tasks (id, priority, due_at, max_attempts, retry_delay)
        VALUES (v_id, p_priority, coalesce(p_due_at, v_now), p_max_attempts, p_retry_delay);
    IF p_key IS NOT NULL THEN
        INSERT INTO {s}.keys VALUES (p_key, v_id, p_priority, p_due_at, p_max_attempts, p_retry_delay);
    END IF;
    RETURN v_id;
END $$;

-- The claim: the best waiting task that is due, locked with SKIP LOCKED, leased under a fresh token.
CREATE OR REPLACE FUNCTION {s}.fp_dispatch(p_worker text, p_now bigint, p_duration bigint,
                                           OUT o_task bigint, OUT o_token bigint)
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint; v_capacity bigint; v_load bigint;
BEGIN
{begin}
    SELECT capacity, (SELECT count(*) FROM {s}.tasks WHERE status = 'running' AND worker = p_worker)
        INTO v_capacity, v_load FROM {s}.workers WHERE name = p_worker;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'worker % is unknown: add it with add_worker first', quote_literal(p_worker)
            USING ERRCODE = '{err}';
    END IF;
    IF v_load >= v_capacity THEN
        RETURN;  -- full: no id, no token, nothing assigned
    END IF;
    UPDATE {s}.tasks t SET
        status = 'running', attempts = t.attempts + 1, worker = p_worker, token = v_token + 1,
        started_at = p_now, expires_at = p_now + p_duration, expired_token = NULL
    WHERE t.id = (SELECT id FROM {s}.tasks
                  WHERE status IN ('pending', 'retry_wait') AND due_at <= p_now
                  ORDER BY priority DESC, due_at, id
                  LIMIT 1
                  FOR UPDATE SKIP LOCKED)
      AND t.status IN ('pending', 'retry_wait')
    RETURNING t.id, t.token INTO o_task, o_token;
    IF o_task IS NOT NULL THEN
        UPDATE {s}.meta SET last_token = o_token;
    END IF;
END $$;

-- complete, fail and renew: one UPDATE each, fenced by token AND expiry in its WHERE.
CREATE OR REPLACE FUNCTION {s}.fp_complete(p_id bigint, p_token bigint, p_now bigint,
                                           OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint;
BEGIN
{begin_task}
    UPDATE {s}.tasks SET status = 'succeeded',
        worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false
    WHERE id = p_id AND status = 'running' AND token = p_token AND expires_at > p_now;
    accepted := FOUND;
    IF NOT accepted THEN reason := {s}.fp_rejection(p_id, p_token); END IF;
END $$;

CREATE OR REPLACE FUNCTION {s}.fp_fail(p_id bigint, p_token bigint, p_now bigint,
                                       OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint;
BEGIN
{begin_task}
    UPDATE {s}.tasks SET
        status = CASE WHEN cancel_requested THEN 'cancelled'
                      WHEN max_attempts IS NOT NULL AND attempts >= max_attempts THEN 'failed'
                      ELSE 'retry_wait' END,
        due_at = CASE WHEN cancel_requested OR (max_attempts IS NOT NULL AND attempts >= max_attempts) THEN due_at
                      ELSE (p_now + retry_delay * power(2::numeric, attempts - 1))::bigint END,
        worker = NULL, token = NULL, started_at = NULL, expires_at = NULL, cancel_requested = false
    WHERE id = p_id AND status = 'running' AND token = p_token AND expires_at > p_now;
    accepted := FOUND;
    IF NOT accepted THEN reason := {s}.fp_rejection(p_id, p_token); END IF;
END $$;

CREATE OR REPLACE FUNCTION {s}.fp_renew(p_id bigint, p_token bigint, p_now bigint, p_duration bigint,
                                        OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint;
BEGIN
{begin_task}
    UPDATE {s}.tasks SET expires_at = p_now + p_duration
    WHERE id = p_id AND status = 'running' AND token = p_token AND expires_at > p_now
      AND NOT cancel_requested;
    accepted := FOUND;
    IF NOT accepted THEN
        reason := coalesce({s}.fp_rejection(p_id, p_token), 'cancel_requested');
    END IF;
END $$;

-- cancel: one UPDATE; a waiting task ends cancelled, a running one is asked to stop.
CREATE OR REPLACE FUNCTION {s}.fp_cancel(p_id bigint, p_now bigint, OUT accepted boolean, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint;
BEGIN
{begin_task}
    UPDATE {s}.tasks SET
        cancel_requested = (status = 'running'),
        status = CASE WHEN status = 'running' THEN 'running' ELSE 'cancelled' END
    WHERE id = p_id AND status NOT IN ('succeeded', 'failed', 'cancelled');
    accepted := FOUND;
    IF NOT accepted THEN reason := 'already_final'; END IF;
END $$;

-- advance, and the start of a timed call for the broken schedulers in impl/postgres_broken.py.
CREATE OR REPLACE FUNCTION {s}.fp_advance(p_now bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint;
BEGIN
{begin}
END $$;

CREATE OR REPLACE FUNCTION {s}.fp_advance_task(p_id bigint, p_now bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE v_token bigint; v_last bigint;
BEGIN
{begin_task}
END $$;
"""


def schema_ddl(schema: str) -> str:
    """Every statement that creates ``schema``'s tables and functions (idempotent).

    ``schema`` must already be a validated, double-quoted identifier.
    """
    tables = _TABLES.format(s=schema, version=SCHEMA_VERSION)
    functions = _FUNCTIONS.replace("{begin_task}", _BEGIN_TASK).replace("{begin}", _BEGIN)
    functions = functions.replace("{s}", schema).replace("{err}", INVALID_ARGUMENT_STATE)
    return tables + functions
