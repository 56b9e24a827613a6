"""Executing a relaunch plan: drain, launch, watch the first steps, and leave an audit row in the store.

Idempotent per incident, even for executions running at the same time: the first takes the incident's
claim (a row keyed by the incident, inserted in the transaction that records its launch); the others see
it and launch nothing (the repeat is recorded, with the job id of the launch that stands). Only a launch
that failed before the scheduler accepted anything gives its claim back, so it may be retried.

A claim records the process that took it. When that process died before recording its launch (killed
mid-launch), the claim is not taken over silently, since the scheduler may have accepted the job: the
refusal says how to check, and `release()` gives the claim back.

Only nodes the scheduler itself lists (in the job's partition) reach its commands; a scheduler that cannot
be asked stops the relaunch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from clusterlab import hostlist, store
from clusterlab.relaunch.backends import Backend, get_backend
from clusterlab.relaunch.backends.base import (
    COMPLETED,
    FAILED,
    PENDING,
    RUNNING,
    Runner,
    SchedulerUnavailable,
    record,
    run_argv,
)
from clusterlab.relaunch.plan import RelaunchPlan
from clusterlab.relaunch.safety import UnsafeValueError, check_host, check_path

# Results after which the incident does not count as relaunched: the claim is given back (store.py's _V5).
_NOT_LAUNCHED = ("failed", "refused", "repeat", "released")
_IN_PROGRESS = ("launching", "submitted")
_CLAIM_TRIES = 50
_SKIP_SUFFIXES = (".duckdb", ".wal", ".pt", ".distcp", ".metadata", ".safetensors")


class RelaunchRefused(RuntimeError):
    """The plan must not be executed as it stands (unsafe value, no command, too few nodes)."""


@dataclass
class Execution:
    """What executing a plan did (or, for a repeat, what the standing launch did)."""

    relaunch_id: int
    incident: str
    job_id: str | None
    result: str  # running | completed | pending | no_steps | job_failed | unknown | failed | refused
    repeat: bool = False
    commands: list[dict] = field(default_factory=list)
    first_steps: dict | None = None
    note: str | None = None
    at: dt.datetime | None = None
    refused_hosts: list[dict] = field(default_factory=list)  # host, reason: kept out of the scheduler's commands

    def to_dict(self) -> dict:
        return {"relaunch_id": self.relaunch_id, "incident": self.incident, "job_id": self.job_id,
                "result": self.result, "repeat": self.repeat, "first_steps": self.first_steps,
                "commands": self.commands, "note": self.note, "refused_hosts": self.refused_hosts,
                "at": self.at.isoformat() if self.at else None}


def check_plan(plan: RelaunchPlan, require_nodes: bool = True) -> None:
    """Everything about to reach a command checked once more; RelaunchRefused if it must not run."""
    if plan.nothing_to_relaunch:
        raise RelaunchRefused(f"nothing to relaunch: {plan.nothing_to_relaunch}")
    try:
        for host in [*(e.host for e in plan.exclude), *(d["host"] for d in plan.drain), *plan.spec.exclude]:
            check_host(host, "the relaunch plan")
        if plan.spec.resume_path:
            check_path(plan.spec.resume_path, "the relaunch plan")
    except UnsafeValueError as e:
        raise RelaunchRefused(str(e)) from None
    if not plan.command:
        raise RelaunchRefused(f"no {plan.backend} command for run {plan.run!r}: " + "; ".join(plan.warnings))
    if any(not isinstance(a, str) or "\0" in a or "\n" in a for a in plan.command):
        raise RelaunchRefused(f"the command holds a value that is not a plain argument: {plan.command!r}")
    if require_nodes and None not in (plan.nodes_needed, plan.nodes_available) \
            and plan.nodes_available < plan.nodes_needed:
        raise RelaunchRefused(f"only {plan.nodes_available} healthy nodes for the {plan.nodes_needed} needed")


def check_live_nodes(plan: RelaunchPlan, states: dict[str, bool] | None) -> None:
    """The plan counted healthy nodes from the inventory; the scheduler must have that many up now."""
    needed, healthy = plan.nodes_needed, plan.spec.healthy_hosts
    if states is None or not needed or not healthy or not set(healthy) & set(states):
        return  # the scheduler can't tell, or names its nodes otherwise than the inventory: the plan stands
    up = [h for h in healthy if states.get(h)]
    if len(up) < needed:
        down = [h for h in healthy if not states.get(h)]
        raise RelaunchRefused(f"the scheduler has {len(up)} of the run's healthy nodes up for the {needed} needed "
                              f"(not up: {hostlist.compress(down)})")


def scheduler_plan(plan: RelaunchPlan, be: Backend, runner: Runner,
                   require_nodes: bool = True) -> tuple[RelaunchPlan, list[dict]]:
    """The plan as the scheduler allows it, and the hosts refused (host, reason): only its own nodes reach it."""
    try:
        nodes = be.scheduler_nodes(runner)
    except SchedulerUnavailable as e:
        raise RelaunchRefused(f"the scheduler cannot be reached: {e}") from None
    if nodes is None:  # no scheduler (torchrun): no host reaches a scheduler command
        return plan, []
    requested = be.job_partitions(plan.spec)
    if require_nodes:
        check_live_nodes(plan, {h: up for h, up in nodes.up.items() if nodes.refusal(h, requested) is None})
    refused = [{"host": h, "reason": why} for h in dict.fromkeys([*(d["host"] for d in plan.drain), *plan.spec.exclude])
               if (why := nodes.refusal(h, requested))]
    if not refused:
        return plan, []
    # NOTE: a name the scheduler does not list (log text, or another naming of a node) is left out of its
    # commands, not passed on: `sbatch --exclude` rejects unknown nodes and a keyword would hit every node.
    out = {r["host"] for r in refused}
    spec = dataclasses.replace(plan.spec, exclude=[h for h in plan.spec.exclude if h not in out])
    warnings = [*plan.warnings, *(f"refused host {r['host']}: {r['reason']}; left out of the scheduler's commands"
                                  for r in refused)]
    return dataclasses.replace(plan, drain=[d for d in plan.drain if d["host"] not in out], spec=spec,
                               command=be.command(spec), warnings=warnings), refused


def execute(con: duckdb.DuckDBPyConnection, plan: RelaunchPlan, *, backend: Backend | None = None,
            runner: Runner = run_argv, watch_s: float = 60.0, poll_s: float = 1.0,
            watch_dir: str | Path | None = None, require_nodes: bool = True) -> Execution:
    """Drain, launch and watch; the audit row's id, job id and result. A repeat launches nothing."""
    be = backend or get_backend(plan.backend)
    try:
        check_plan(plan, require_nodes)
        prior = _holder(con, plan.incident)  # a repeat needs no scheduler: say so even when it is down
        if prior is not None and _orphaned(prior):
            raise RelaunchRefused(_orphan_message(plan, prior))
        claimed = False
        if prior is None:
            plan, refused = scheduler_plan(plan, be, runner, require_nodes)
            claimed, prior = _claim(con, plan)
    except RelaunchRefused as e:
        _insert(con, plan, "refused", detail={"error": str(e)})
        raise
    if not claimed:
        rid = _insert(con, plan, "repeat", job_id=prior["job_id"], detail={"standing": prior["relaunch_id"]})
        return Execution(rid, plan.incident, prior["job_id"], prior["result"], repeat=True, note=_standing(prior))
    rid = prior["relaunch_id"]
    log: list[dict] = []
    for d in plan.drain:
        argv = be.drain_command(d["host"], d["reason"])
        if argv:
            record(runner, argv, log)
    before = _sizes(Path(watch_dir)) if watch_dir else {}  # what the failed attempts wrote: not new steps
    launch = be.launch(plan.spec, runner)
    log += launch.commands
    if launch.error or not launch.job_id:
        _finish(con, rid, "failed", None, log, {"error": launch.error, "refused_hosts": refused})
        return Execution(rid, plan.incident, None, "failed", commands=log, note=launch.error, refused_hosts=refused)
    _finish(con, rid, "submitted", launch.job_id, log, {"note": launch.note, "refused_hosts": refused}, final=False)
    state, steps = watch(be, launch.job_id, runner, timeout_s=watch_s, poll_s=poll_s, watch_dir=watch_dir,
                         run=plan.run, after_step=plan.checkpoint.step or 0, before=before)
    result = _result(state, steps, watch_dir is not None)
    _finish(con, rid, result, launch.job_id, log, {"note": launch.note, "state": state, "first_steps": steps,
                                                   "refused_hosts": refused})
    return Execution(rid, plan.incident, launch.job_id, result, commands=log, first_steps=steps, note=launch.note,
                     at=dt.datetime.now(dt.UTC).replace(tzinfo=None), refused_hosts=refused)


def _standing(prior: dict) -> str:
    """`already relaunched (audit row 3, job 42)`, or `a relaunch is in progress (audit row 3)`."""
    job = f", job {prior['job_id']}" if prior.get("job_id") else ""
    if prior.get("result") in _IN_PROGRESS:
        return f"a relaunch of this incident is in progress (audit row {prior['relaunch_id']}{job})"
    return f"already relaunched (audit row {prior['relaunch_id']}{job})"


def _result(state: str, steps: dict | None, watched: bool) -> str:
    if state == FAILED:
        return "job_failed"
    if state == COMPLETED:
        return "completed"
    if state == RUNNING:
        return "running" if steps or not watched else "no_steps"
    return "pending" if state == PENDING else "unknown"


def _claim(con: duckdb.DuckDBPyConnection, plan: RelaunchPlan) -> tuple[bool, dict]:
    """Claim the incident with its `launching` row in one transaction, or return the launch that holds the claim."""
    for attempt in range(_CLAIM_TRIES):
        con.execute("BEGIN")
        try:
            prior = _holder(con, plan.incident)
            if prior is not None:
                con.execute("COMMIT")
                return False, prior
            rid = _insert(con, plan, "launching")
            con.execute("INSERT INTO relaunch_claims (incident_id, relaunch_id, pid, host) VALUES (?, ?, ?, ?)",
                        [plan.incident, rid, os.getpid(), socket.gethostname()])
            con.execute("COMMIT")
            return True, {"relaunch_id": rid}
        except (duckdb.ConstraintException, duckdb.TransactionException):
            # NOTE: another execution inserted the same claim first (the primary key refuses a second one, at
            # the insert or at commit): read its claim on the next pass, once it is committed.
            _rollback(con)
            time.sleep(0.005 * (attempt + 1))
        except BaseException:
            _rollback(con)
            raise
    raise RelaunchRefused(f"incident {plan.incident} is being claimed by another execution that does not finish")


def _holder(con: duckdb.DuckDBPyConnection, incident: str) -> dict | None:
    """The launch that holds the incident's claim (relaunch_id, job_id, result), if one does."""
    return _claim_row(con, "c.incident_id = ?", incident)


def _claim_row(con: duckdb.DuckDBPyConnection, where: str, value: object) -> dict | None:
    """The claim `where` picks, with its launch's job id and result, if there is one."""
    rows = store.frame(con, f"""SELECT c.incident_id, c.relaunch_id, r.job_id, r.result, c.pid, c.host, c.claimed_at
                                FROM relaunch_claims c LEFT JOIN relaunches r USING (relaunch_id)
                                WHERE {where}""", [value])
    return rows.row(0, named=True) if rows.height else None


def _orphaned(prior: dict) -> bool:
    """The claim's process died before it recorded what the scheduler said (only knowable on its own host)."""
    if prior.get("result") != "launching" or prior.get("pid") is None or prior.get("host") != socket.gethostname():
        return False
    try:
        os.kill(prior["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _orphan_message(plan: RelaunchPlan, prior: dict) -> str:
    return (f"audit row {prior['relaunch_id']}: the clusterlab process (pid {prior['pid']}) that claimed incident "
            f"{plan.incident} at {prior['claimed_at']:%Y-%m-%d %H:%M:%S} died before it recorded its launch, so "
            f"the scheduler may or may not have a job for it. Check (e.g. `squeue --name {plan.run}` or sacct "
            f"since that time); if there is none, give the claim back with `clusterlab relaunch --run {plan.run} "
            f"--release {prior['relaunch_id']}` and execute again")


def release(con: duckdb.DuckDBPyConnection, relaunch_id: int) -> str:
    """Give back the claim of a launch whose process died mid-launch (see `execute`); returns its incident.

    Refused for a launch that recorded its job or is still under way in a living process."""
    prior = _claim_row(con, "c.relaunch_id = ?", relaunch_id)
    if prior is None:
        raise RelaunchRefused(f"audit row {relaunch_id} holds no claim")
    if prior["result"] != "launching":
        raise RelaunchRefused(f"audit row {relaunch_id} recorded its launch ({prior['result']}, job "
                              f"{prior['job_id']}): its claim stands")
    if not _orphaned(prior):
        raise RelaunchRefused(f"audit row {relaunch_id} is held by pid {prior['pid']} on {prior['host']}, which "
                              "is still running or cannot be checked from here")
    _finish(con, relaunch_id, "released", None, [], {"note": "claim given back by hand after its process died"})
    return prior["incident_id"]


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the open transaction, if a failed commit left one."""
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("ROLLBACK")


def _insert(con: duckdb.DuckDBPyConnection, plan: RelaunchPlan, result: str, job_id: str | None = None,
            detail: dict | None = None) -> int:
    doc = {**plan.to_dict(), "incident": plan.incident, "warnings": plan.warnings}
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return con.execute("""
        INSERT INTO relaunches (incident_id, run, backend, plan_json, command, commands_json, started_at,
                                finished_at, job_id, result, detail)
        VALUES (?, ?, ?, ?, ?, '[]', ?, ?, ?, ?, ?) RETURNING relaunch_id""",
        [plan.incident, plan.run, plan.backend, json.dumps(doc, default=str), plan.command, now,
         None if result == "launching" else now, job_id, result, json.dumps(detail or {}, default=str)],
    ).fetchall()[0][0]


def _finish(con: duckdb.DuckDBPyConnection, rid: int, result: str, job_id: str | None, log: list[dict],
            detail: dict, final: bool = True) -> None:
    """Record how the launch went; a launch that failed before the scheduler accepted it gives its claim back."""
    con.execute("BEGIN")
    try:
        con.execute("""UPDATE relaunches SET result = ?, job_id = ?, commands_json = ?, detail = ?,
                       finished_at = CASE WHEN ? THEN ? ELSE finished_at END WHERE relaunch_id = ?""",
                    [result, job_id, json.dumps(log, default=str), json.dumps(detail, default=str), final,
                     dt.datetime.now(dt.UTC).replace(tzinfo=None), rid])
        if result in _NOT_LAUNCHED:
            con.execute("DELETE FROM relaunch_claims WHERE relaunch_id = ?", [rid])
        con.execute("COMMIT")
    except BaseException:
        _rollback(con)
        raise


def watch(backend: Backend, job_id: str, runner: Runner, *, timeout_s: float, poll_s: float,
          watch_dir: str | Path | None, run: str, after_step: int, before: dict[Path, int]) -> tuple[str, dict | None]:
    """Poll the job until its first steps after `after_step` show up, it ends, or `timeout_s` passes."""
    end = time.monotonic() + timeout_s
    while True:
        state = backend.state(job_id, runner)
        steps = new_steps(Path(watch_dir), before, run, after_step) if watch_dir else None
        if steps or state in (COMPLETED, FAILED) or time.monotonic() >= end:
            return state, steps
        time.sleep(poll_s)


def _sizes(watch_dir: Path) -> dict[Path, int]:
    """The size of every log file under `watch_dir` (the relaunch's baseline)."""
    return {p: p.stat().st_size for p in watch_dir.rglob("*") if p.is_file() and not p.name.endswith(_SKIP_SUFFIXES)}


def new_steps(watch_dir: Path, before: dict[Path, int], run: str, after_step: int) -> dict | None:
    """Steps after `after_step` in what was written under `watch_dir` since the `before` sizes.

    Only new files and the bytes appended to old ones count: the failed attempt's own steps past
    the checkpoint (written a moment before the relaunch, or into the same file) are not its first steps.
    """
    from clusterlab.ingest import driver as ingest  # late: the plan alone does not need the collectors

    grown = [(p, before.get(p, 0)) for p, size in _sizes(watch_dir).items() if size > before.get(p, 0)]
    grown = [(p, old) for p, old in grown if not (old and p.suffix == ".gz")]  # an appended gzip can't be cut
    if not grown:
        return None
    with tempfile.TemporaryDirectory(prefix="clusterlab-watch-") as tmp:
        files = []
        for p, old in grown:
            dest = Path(tmp) / p.relative_to(watch_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "rb") as src, open(dest, "wb") as out:
                src.seek(old)
                shutil.copyfileobj(src, out)
            files.append(dest)
        scratch = store.connect(":memory:")
        try:
            ingest.ingest(scratch, files, run=run)
            n, lo, hi, loss = scratch.execute("""
                WITH s AS (SELECT step, loss, ts FROM steps UNION ALL SELECT step, loss, ts FROM rank_steps)
                SELECT count(DISTINCT step), min(step), max(step), arg_max(loss, step) FROM s WHERE step > ?""",
                [after_step]).fetchall()[0]
        finally:
            scratch.close()
    return {"steps": n, "first_step": lo, "last_step": hi, "loss": loss} if n else None
