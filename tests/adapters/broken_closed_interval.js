#!/usr/bin/env node
// A deliberately broken scheduler: the JavaScript adapter with a CLOSED lease interval,
// [started_at, expires_at] instead of [started_at, expires_at). A lease is still alive at
// exactly expires_at, so a completion arriving at that instant is accepted and the task is
// not yet pending again. `fencepost check --exec` must reject it with a short counterexample.
"use strict";

const { Scheduler, serve } = require("./scheduler.js");

class ClosedInterval extends Scheduler {
  leaseEnded(task, now) {
    return task.expires_at < now; // the bug: the seeds' interval is half-open, now <= expires_at is not alive
  }
}

serve(() => new ClosedInterval());
