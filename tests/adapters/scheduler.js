#!/usr/bin/env node
// A lease-based scheduler in JavaScript, speaking fencepost's --exec adapter protocol
// (JSON lines on stdin/stdout; see "Check your own scheduler" in the README).
//
//   fencepost check --exec "node tests/adapters/scheduler.js"
//
// The scheduler is the direct design of the seeds (a scan over all tasks per timed call,
// like fencepost.impl.simple.SimpleScheduler), written from the README's contract table.
// No npm packages: Node's standard library only. Exported, so a broken variant can
// override one rule (see broken_closed_interval.js).
//
// Every int is a BigInt: the contract's ints are signed 64-bit (docs/contract.md, "Values"), and
// JSON.parse reads numbers as doubles, exact only below 2**53, so requests are read with
// parseInts and answers written with stringify below.
"use strict";

const readline = require("readline");

const FINAL = new Set(["succeeded", "failed", "cancelled"]);
const DISPATCHABLE = new Set(["pending", "retry_wait"]);

// The protocol's only error: a call refused for a bad argument. Answered as {"error": "ValueError"}.
class ProtocolValueError extends Error {}

function refuse(message) {
  throw new ProtocolValueError(message);
}

// The contract's values (spec/protocol.py): ints from INT_MIN to INT_MAX, texts of at most
// MAX_TEXT_BYTES bytes of UTF-8 with none of FORBIDDEN_TEXT's characters (lone surrogates included).
const INT_MIN = -(2n ** 63n);
const INT_MAX = 2n ** 63n - 1n;
const MAX_TEXT_BYTES = 8192;
const FORBIDDEN_TEXT = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// JSON text with every BigInt written as its digits (JSON.stringify refuses BigInts): each becomes
// a string marked by a NUL first, which stringify escapes and no accepted text holds, then unquoted.
function stringify(value) {
  return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `\u0000${v}` : v)).replace(/"\\u0000(-?\d+)"/g, "$1");
}

// A request line with every integer literal read as a BigInt: a JSON number with no fraction or
// exponent, outside strings, is quoted with the same NUL mark first and revived.
function parseInts(line) {
  let marked = "";
  let inString = false;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (inString) {
      marked += c;
      if (c === "\\") { marked += line[i + 1]; i += 1; } else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      marked += c;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      const number = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(line.slice(i))[0];
      marked += /[.eE]/.test(number) ? number : `"\\u0000${number}"`;
      i += number.length - 1;
    } else marked += c;
  }
  return JSON.parse(marked, (_, v) => (typeof v === "string" && /^\u0000-?\d+$/.test(v) ? BigInt(v.slice(1)) : v));
}

function show(value) {
  return stringify(value);
}

// An int argument: a JSON integer (a BigInt here; true, "7", 7.5 and [7] are not ints) in the contract's range.
function checkInt(name, value) {
  if (typeof value !== "bigint") refuse(`${name} must be an int: got ${show(value)}`);
  if (value < INT_MIN || value > INT_MAX) refuse(`${name} must be a signed 64-bit int: got ${value}`);
  return value;
}

// A worker name or key: a non-empty string the contract allows.
function checkText(name, value) {
  if (typeof value !== "string" || value === "") refuse(`${name} must be a non-empty string: got ${show(value)}`);
  if (FORBIDDEN_TEXT.test(value)) refuse(`${name} holds a character the contract refuses: ${show(value.slice(0, 40))}`);
  if (Buffer.byteLength(value, "utf8") > MAX_TEXT_BYTES) refuse(`${name} is longer than ${MAX_TEXT_BYTES} bytes`);
  return value;
}

// A time the call would reach (a lease end, a retry time): not after INT_MAX.
function checkEnd(what, value) {
  if (value > INT_MAX) refuse(`${what} ${value} is after the latest time ${INT_MAX}`);
  return value;
}

function checkMin(name, value, minimum) {
  checkInt(name, value);
  if (value < minimum) refuse(`${name} must be >= ${minimum}: got ${value}`);
  return value;
}

class Scheduler {
  constructor() {
    this.now = 0n;
    this.tasks = []; // index id - 1
    this.capacity = new Map(); // worker -> slots
    this.lastToken = 0n;
    this.keys = new Map(); // idempotency key -> {id, args}
  }

  // A lease is [started_at, expires_at): it has ended once now reaches expires_at.
  leaseEnded(task, now) {
    return task.expires_at <= now;
  }

  checkTime(now) {
    checkInt("now", now);
    if (now < 0n) refuse(`now must be >= 0: got ${now}`);
    if (now < this.now) refuse(`time can't go backwards: now=${now} < current time ${this.now}`);
  }

  get(taskId) {
    checkInt("task_id", taskId);
    if (taskId < 1n || taskId > BigInt(this.tasks.length)) refuse(`task_id ${taskId} is unknown`);
    return this.tasks[Number(taskId) - 1];
  }

  release(task, status) {
    task.status = status;
    task.worker = task.token = task.expires_at = null;
    task.cancel_requested = false;
  }

  budgetSpent(task) {
    return task.max_attempts !== null && task.attempts >= task.max_attempts;
  }

  expire(now) {
    for (const task of this.tasks) {
      if (task.status === "running" && this.leaseEnded(task, now)) {
        const token = task.token;
        if (task.cancel_requested) this.release(task, "cancelled");
        else if (this.budgetSpent(task)) this.release(task, "failed");
        else this.release(task, "pending");
        task.expired_token = token;
      }
    }
    this.now = now;
  }

  add_worker({ worker, capacity }) {
    checkText("worker", worker);
    checkMin("capacity", capacity, 1n);
    if (this.capacity.has(worker)) refuse(`worker ${show(worker)} already exists`);
    this.capacity.set(worker, capacity);
    return null;
  }

  submit({ priority = 0n, due_at = null, max_attempts = null, retry_delay = 1n, key = null }) {
    checkInt("priority", priority);
    if (due_at !== null) checkMin("due_at", due_at, 0n);
    if (max_attempts !== null) checkMin("max_attempts", max_attempts, 1n);
    checkMin("retry_delay", retry_delay, 1n);
    if (key !== null) checkText("key", key);
    const given = show([priority, due_at, max_attempts, retry_delay]);
    if (key !== null && this.keys.has(key)) {
      const first = this.keys.get(key);
      if (first.given !== given) refuse(`key ${show(key)} was submitted with other arguments: ${first.given}, now ${given}`);
      return first.id;
    }
    const id = BigInt(this.tasks.length + 1);
    this.tasks.push({
      id, status: "pending", priority, due_at: due_at === null ? this.now : due_at, attempts: 0n,
      worker: null, token: null, expires_at: null, cancel_requested: false,
      max_attempts, retry_delay, expired_token: null,
    });
    if (key !== null) this.keys.set(key, { id, given });
    return id;
  }

  dispatch({ worker, now, duration }) {
    if (typeof worker !== "string") refuse(`worker must be a string: got ${show(worker)}`);
    if (!this.capacity.has(worker)) checkText("worker", worker);
    if (!this.capacity.has(worker)) refuse(`worker ${show(worker)} is unknown`);
    this.checkTime(now);
    checkMin("duration", duration, 1n);
    checkEnd("the lease's end", now + duration);
    this.expire(now);
    const load = this.tasks.filter((t) => t.status === "running" && t.worker === worker).length;
    if (BigInt(load) >= this.capacity.get(worker)) return null;
    let best = null;
    for (const t of this.tasks) {
      if (!DISPATCHABLE.has(t.status) || t.due_at > now) continue;
      if (best === null || t.priority > best.priority || (t.priority === best.priority && t.due_at < best.due_at)) best = t;
    }
    if (best === null) return null;
    this.lastToken += 1n;
    Object.assign(best, { status: "running", worker, token: this.lastToken, expires_at: now + duration, expired_token: null });
    best.attempts += 1n;
    return { task_id: best.id, worker, token: best.token, started_at: now, expires_at: now + duration };
  }

  leaseCall({ task_id, token, now, duration = null }, failing = false) {
    const task = this.get(task_id);
    checkInt("token", token);
    this.checkTime(now);
    if (duration !== null) {
      checkMin("duration", duration, 1n);
      checkEnd("the lease's end", now + duration);
    }
    // an accepted fail that retries must not send the task past the latest time: refused before any change
    if (failing && task.status === "running" && task.token === token && !this.leaseEnded(task, now)
        && !task.cancel_requested && !this.budgetSpent(task)) checkEnd("the retry time", now + this.backoff(task));
    this.expire(now);
    return task;
  }

  backoff(task) {
    return task.retry_delay * 2n ** (task.attempts - 1n);
  }

  rejection(task, token) {
    if (task.status === "running") return task.token === token ? null : { accepted: false, reason: "stale_token" };
    if (task.expired_token !== null && task.expired_token === token) return { accepted: false, reason: "lease_expired" };
    if (FINAL.has(task.status)) return { accepted: false, reason: "already_final" };
    return { accepted: false, reason: "not_running" };
  }

  complete(args) {
    const task = this.leaseCall(args);
    const refused = this.rejection(task, args.token);
    if (refused) return refused;
    this.release(task, "succeeded");
    return { accepted: true, reason: null };
  }

  fail(args) {
    const task = this.leaseCall(args, true);
    const refused = this.rejection(task, args.token);
    if (refused) return refused;
    if (task.cancel_requested) this.release(task, "cancelled");
    else if (this.budgetSpent(task)) this.release(task, "failed");
    else {
      const backoff = this.backoff(task);
      this.release(task, "retry_wait");
      task.due_at = args.now + backoff;
    }
    return { accepted: true, reason: null };
  }

  cancel({ task_id, now }) {
    const task = this.get(task_id);
    this.checkTime(now);
    this.expire(now);
    if (FINAL.has(task.status)) return { accepted: false, reason: "already_final" };
    if (task.status === "running") task.cancel_requested = true;
    else this.release(task, "cancelled");
    return { accepted: true, reason: null };
  }

  renew(args) {
    const task = this.leaseCall(args);
    const refused = this.rejection(task, args.token);
    if (refused) return refused;
    if (task.cancel_requested) return { accepted: false, reason: "cancel_requested" };
    task.expires_at = args.now + args.duration;
    return { accepted: true, reason: null };
  }

  advance({ now }) {
    this.checkTime(now);
    this.expire(now);
    return null;
  }

  task({ task_id }) {
    const t = this.get(task_id);
    return {
      id: t.id, status: t.status, priority: t.priority, due_at: t.due_at, attempts: t.attempts,
      worker: t.worker, token: t.token, expires_at: t.expires_at, cancel_requested: t.cancel_requested,
    };
  }
}

const METHODS = ["add_worker", "submit", "dispatch", "complete", "fail", "cancel", "renew", "advance", "task"];

// Answer one request object; every answer carries the request's id.
function answer(state, request) {
  const { id, op, args } = request;
  try {
    if (op === "hello") return { id, result: { protocol: 1n, capabilities: ["key"] } };
    if (op === "reset") {
      state.scheduler = state.make();
      return { id, result: null };
    }
    if (op === "now") return { id, result: state.scheduler.now };
    if (!METHODS.includes(op)) return { id, error: "UnknownOp", message: `unknown op ${show(op)}` };
    return { id, result: state.scheduler[op](args) };
  } catch (err) {
    if (err instanceof ProtocolValueError) return { id, error: "ValueError", message: err.message };
    return { id, error: err.name || "Error", message: String(err.message) };
  }
}

// Read requests line by line from stdin, answer each on stdout, until stdin closes.
function serve(make) {
  const state = { make, scheduler: make() };
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    process.stdout.write(stringify(answer(state, parseInts(line))) + "\n");
  });
}

module.exports = { Scheduler, serve, refuse };

if (require.main === module) serve(() => new Scheduler());
