"""Policy-driven relaunch from a watch: on a detection, the existing relaunch plan, checked by the policy and
executed by the existing driver (audited and idempotent per detection); `ask` only proposes it.

A hang leaves no attempt-end incident behind (the job still runs), so the plan gets the watch's own finding:
the hung host excluded (and drained where the policy says so), keyed by the detection so that executing it
twice launches once. With `cancel_hung_job` the hung job is cancelled through the scheduler first. When the
scheduler cannot be reached the watch says so and tries again next tick: it never relaunches blind.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from collections.abc import Callable

import duckdb

from clusterlab import store
from clusterlab.relaunch import execute, relaunch_plan
from clusterlab.relaunch.backends import get_backend
from clusterlab.relaunch.backends.base import Runner, run_argv
from clusterlab.relaunch.execute import RelaunchRefused
from clusterlab.relaunch.plan import Exclusion, RelaunchPlan
from clusterlab.relaunch.safety import UnsafeValueError, check_host, reason_text
from clusterlab.watch.loop import LOCK_WAIT_S, TickResult, utcnow
from clusterlab.watch.policy import Policy, drains, refusal

CANCEL_WAIT_S = 60.0  # how long a cancelled job may take to let go of its nodes
_GONE = {"CANCELLED", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
         "DEADLINE"}


class SchedulerDown(RuntimeError):
    """The scheduler did not answer: nothing is relaunched, the detection is tried again next tick."""


@dataclasses.dataclass
class PolicyRelaunch:
    """An `after_close` hook of a Watcher: relaunch (or propose to) on the detections the policy names."""

    db: str
    policy: Policy
    mode: str = "ask"  # ask | auto
    say: Callable[[str], None] = print
    runner: Runner = run_argv
    watch_s: float = 0.0  # the driver's watch of the first steps (the watch itself sees them next ticks)
    outcomes: list[dict] = dataclasses.field(default_factory=list)
    _pending: list[dict] = dataclasses.field(default_factory=list)

    def __call__(self, res: TickResult) -> None:
        todo, self._pending = [*self._pending, *(e for e in res.new if e["kind"] in self.policy.relaunch_on)], []
        for ev in todo:
            try:
                self.outcomes.append(self.handle(ev))
            except SchedulerDown as e:
                self.say(f"relaunch: the scheduler cannot be reached ({e}); nothing relaunched, trying again next "
                         "tick")
                self._pending.append(ev)

    def handle(self, ev: dict, now: dt.datetime | None = None) -> dict:
        """Plan, check against the policy, then propose (ask) or cancel, drain and resubmit (auto)."""
        con = store.connect(self.db, wait_s=LOCK_WAIT_S)
        try:
            return self._handle(con, ev, now or utcnow())
        finally:
            con.close()

    def _handle(self, con: duckdb.DuckDBPyConnection, ev: dict, now: dt.datetime) -> dict:
        try:
            plan = with_detection(relaunch_plan(con, ev["run"]), ev, self.policy)
        except (KeyError, ValueError, UnsafeValueError) as e:
            return self._outcome(ev, "no_plan", str(e))
        why = refusal(self.policy, con, ev, plan, now)
        if why:
            return self._outcome(ev, "refused", why)
        plan = dataclasses.replace(plan, drain=drains(self.policy, plan))
        what = (f"exclude {', '.join(plan.spec.exclude) or 'nothing'}, drain "
                f"{', '.join(d['host'] for d in plan.drain) or 'nothing'}, resume from step {plan.checkpoint.step}: "
                f"{' '.join(plan.command)}")
        if self.mode != "auto":
            return self._outcome(ev, "proposed", what, plan=plan.to_dict())
        cancelled = self._cancel(con, ev, plan) if ev["kind"] == "hang" and self.policy.cancel_hung_job else []
        try:
            ex = execute(con, plan, runner=self.runner, watch_s=self.watch_s)
        except RelaunchRefused as e:
            if "cannot be reached" in str(e):
                raise SchedulerDown(str(e)) from None
            return self._outcome(ev, "refused", str(e))
        return self._outcome(ev, ex.result, what, job_id=ex.job_id, repeat=ex.repeat, cancelled=cancelled)

    def _cancel(self, con: duckdb.DuckDBPyConnection, ev: dict, plan: RelaunchPlan) -> list[str]:
        """scancel the run's running jobs and wait until they let go of their nodes (Slurm only)."""
        if plan.backend != "slurm":
            return []
        names = job_names(con, ev["run"])
        res = self.runner(["squeue", "-h", "-o", "%i %j %T"])
        if res.returncode:
            raise SchedulerDown(f"squeue exit {res.returncode}: {(res.stderr or '').strip()[-200:]}")
        jobs = [f[0] for f in (ln.split() for ln in res.stdout.splitlines())
                if len(f) == 3 and f[1] in names and re.fullmatch(r"\d+(?:_\d+)?", f[0])]
        for job in jobs:
            self.runner(["scancel", job])
        end = time.monotonic() + CANCEL_WAIT_S
        while jobs and time.monotonic() < end:
            states = [self.runner(["squeue", "-h", "-t", "all", "-j", j, "-o", "%T"]).stdout.strip() for j in jobs]
            if all(not s or s in _GONE for s in states):
                break
            time.sleep(0.5)
        return jobs

    def _outcome(self, ev: dict, result: str, detail: str, **extra) -> dict:
        self.say(f"relaunch ({self.mode}) for {ev['kind']} {ev['key']}: {result}: {detail}")
        return {"event": ev["key"], "result": result, "detail": detail, **extra}


def job_names(con: duckdb.DuckDBPyConnection, run: str) -> set[str]:
    """The names the run's scheduler jobs go by: the run's, and its launch command's --job-name."""
    rows = con.execute("SELECT launch_command FROM runs WHERE run = ?", [run]).fetchall()
    m = re.search(r"(?:--job-name|-J)[=\s]?(\S+)", (rows[0][0] or "") if rows else "")
    return {run, m.group(1)} if m else {run}


def with_detection(plan: RelaunchPlan, ev: dict, policy: Policy) -> RelaunchPlan:
    """The plan with a hang's hosts excluded (and drained if the policy drains hangs), or a failure's host
    excluded and drained where the policy drains its failure mode; keyed by the detection."""
    # NOTE: the plan itself takes out only hosts whose mode the taxonomy says to drain or reset; the policy's
    # drain_modes may name others (a rank killed with no cause found): without this they would drain nothing
    if ev["kind"] == "hang" and ev.get("hosts"):
        mode, why, origin, raw = "hang", "no progress: its step records stopped first", "hang detection", ev["hosts"]
    elif ev["kind"] == "failure" and ev.get("host") and ev.get("failure_mode") in policy.drain_modes:
        mode, origin, raw = ev["failure_mode"], "failure detection", [ev["host"]]
        why = f"its failure ({mode}) is one the policy drains"
    else:
        return plan
    hosts = [check_host(h, origin) for h in raw]
    known = {x.host for x in plan.exclude}
    evidence = [{k: str(v) for k, v in e.items()} for e in ev.get("evidence", [])[:3]]
    new = [Exclusion(h, why, mode, ev["key"], evidence) for h in hosts if h not in known]
    drain = [*plan.drain, *({"host": x.host, "reason": reason_text(f"clusterlab watch {ev['key']}: {mode}")}
                            for x in new if mode in policy.drain_modes)]
    spec = dataclasses.replace(plan.spec, exclude=sorted({*plan.spec.exclude, *hosts}))
    return dataclasses.replace(plan, incident=ev["key"], exclude=[*plan.exclude, *new], drain=drain, spec=spec,
                               command=get_backend(plan.backend).command(spec) if plan.command else plan.command)
