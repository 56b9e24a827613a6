"""The relaunch plan of a run: pure data from the store (and the checkpoint directory), nothing executed.

Which hosts to exclude and why (root-cause hosts of the run's incidents whose recommended action is
to drain the node or reset a GPU, hosts that keep turning up in incidents, failed preflight checks),
which of them to drain in the scheduler, the newest checkpoint that is verified intact on disk (newer
ones that the logs record as saved but that are missing or corrupt are `checkpoint_lost`), whether
enough healthy nodes remain, the GPU-hours of work to redo, and the exact command.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from clusterlab import store, taxonomy
from clusterlab.account import attribution, fleet, offenders
from clusterlab.diagnose import checkpoint_files as ckpts
from clusterlab.diagnose import incidents
from clusterlab.relaunch.backends import BACKENDS, LaunchSpec, get_backend
from clusterlab.relaunch.completion import completion
from clusterlab.relaunch.safety import UnsafeValueError, check_host, check_path, reason_text

# recommended actions that take a host out of the next job ("run preflight; drain if it repeats" does not)
DRAIN_ACTIONS = ("drain", "reset")
_DRAINED_KINDS = ("slurm_node_drain", "slurm_node_down")


@dataclass
class Exclusion:
    """A host the relaunched job must not use, and the evidence why."""

    host: str
    reason: str
    failure_mode: str
    incident: str | None
    evidence: list[dict] = field(default_factory=list)
    drained_at: dt.datetime | None = None  # when the scheduler's log last showed it drained or down

    def to_dict(self) -> dict:
        return {"host": self.host, "reason": self.reason, "failure_mode": self.failure_mode,
                "incident": self.incident, "evidence": self.evidence}


@dataclass
class Checkpoint:
    """The checkpoint to resume from (step None: start from scratch) and the newer ones passed over."""

    step: int | None
    path: str | None
    verified: bool
    skipped: list[dict] = field(default_factory=list)  # step, path, failure_mode, reason
    note: str | None = None

    def to_dict(self) -> dict:
        return {"step": self.step, "path": self.path, "verified": self.verified, "skipped": self.skipped}


@dataclass
class RelaunchPlan:
    """What `clusterlab relaunch` would do; `to_dict()` is its JSON document."""

    run: str
    incident: str  # the incident this relaunch answers: the key that makes executing it idempotent
    backend: str
    exclude: list[Exclusion]
    drain: list[dict]  # host, reason
    checkpoint: Checkpoint
    nodes_needed: int | None
    nodes_available: int | None
    recompute_gpu_hours: float
    command: list[str]
    spec: LaunchSpec
    warnings: list[str] = field(default_factory=list)
    executed: bool | dict = False
    nothing_to_relaunch: str | None = None  # why there is nothing to relaunch (the run completed); then no command

    def to_dict(self) -> dict:
        """The JSON of `clusterlab relaunch --json` (the keys of the interface, nothing else)."""
        return {"run": self.run, "nothing_to_relaunch": self.nothing_to_relaunch,
                "exclude": [e.to_dict() for e in self.exclude], "drain": self.drain,
                "checkpoint": self.checkpoint.to_dict(), "nodes_needed": self.nodes_needed,
                "nodes_available": self.nodes_available, "recompute_gpu_hours": self.recompute_gpu_hours,
                "backend": self.backend, "command": self.command, "executed": self.executed}


@dataclass(frozen=True)
class PlanSettings:
    history_days: float = offenders.HISTORY_DAYS  # incidents and preflight results this far back count
    repeat_after: int = offenders.REPEAT_AFTER  # a host in this many host-attributable faults is excluded
    # NOTE: k = repeat_after faults in W = history_days, chosen by benchmarks/repeat_offenders.py on a real fleet
    # (InfiniteHBD-Trace: 584 fault episodes, 400 servers, 348 days): of hosts flagged after 2 faults in 30 days,
    # 0.50 (95 % CI 0.43-0.56) fault again within 30 days against a fleet base rate of 0.089 (lift 5.6), and the
    # flags foresee 0.21 of all faults while keeping 3.0 % of host-days out. One fault (k=1) gives 0.41; 3 in 30
    # days 0.54 but half the recall (0.10). Rule: the most precise with recall >= 0.20 (tests/test_fleet_offenders).
    evidence_lines: int = 3  # evidence lines kept per excluded host


def relaunch_plan(con: duckdb.DuckDBPyConnection, run: str, backend: str | None = None,
                  settings: PlanSettings | None = None,
                  incident_settings: incidents.Settings | None = None) -> RelaunchPlan:
    """The relaunch plan of `run` (KeyError: no such run; UnsafeValueError: a host or path to refuse)."""
    ps = settings or PlanSettings()
    info = _run_info(con, run)
    last = store.frame(con, "SELECT * FROM attempts WHERE run = ? ORDER BY attempt DESC LIMIT 1", [run])
    ref = last["end_ts"][0] if last.height else None
    since = ref - dt.timedelta(days=ps.history_days) if ref else None
    inc, ev = attribution.incidents_of(con, None, incident_settings or incidents.Settings())
    if since is not None and inc.height:
        inc = inc.filter(pl.col("root_ts").is_null() | (pl.col("root_ts") >= since))
    warnings: list[str] = []
    done, unsure = completion(con, run, last, inc, _job_names(run, info))
    if unsure:
        warnings.append(unsure)
    states = _scheduler_states(con)
    exclude = _incident_hosts(inc, ev, run, states, ps, warnings)
    exclude += _repeat_offenders(inc, ev, {e.host for e in exclude}, ps, fleet.episode_faults(con, since, inc))
    exclude += _preflight_failures(con, since, {e.host for e in exclude})
    for e in exclude:
        e.drained_at = _drained_at(states, e.host)
        if e.drained_at is not None:
            e.reason += f"; already drained in the scheduler at {e.drained_at:%Y-%m-%d %H:%M:%S}"
    drain = [{"host": e.host, "reason": reason_text(f"clusterlab {e.incident or _no_incident(e)}: {e.failure_mode}")}
             for e in exclude if e.drained_at is None and not done]  # a completed run drains nothing
    ckpt = choose_checkpoint(con, run, info.get("checkpoint_dir"))
    if ckpt.note:
        warnings.append(ckpt.note)
    needed, available, healthy = _nodes(con, info, last, {e.host for e in exclude}, states, warnings)
    name = backend or _default_backend(info)
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    spec = LaunchSpec(run=run, launch_command=_launch_argv(info, warnings), exclude=sorted(e.host for e in exclude),
                      resume_path=ckpt.path if ckpt.step is not None else None, resume_step=ckpt.step,
                      nodes=needed, healthy_hosts=healthy, previous_job=_previous_job(con, run, info))
    command = [] if done else get_backend(name).command(spec)  # NOTE: a completed run has nothing to launch
    if not command and not done:
        warnings.append(f"run.toml gives no {name} launch_command: no command to run")
    return RelaunchPlan(
        run=run, incident=_incident_key(inc, run, last), backend=name, exclude=exclude, drain=drain,
        checkpoint=ckpt, nodes_needed=needed, nodes_available=available,
        recompute_gpu_hours=0.0 if done else _recompute_gpu_hours(con, run, ckpt.step, info), command=command,
        spec=spec, warnings=warnings, nothing_to_relaunch=done)


def _run_info(con: duckdb.DuckDBPyConnection, run: str) -> dict:
    """The run's row of `runs` with its cluster's GPUs per node (KeyError when the store has no such run)."""
    rows = store.frame(con, """SELECT r.*, c.gpus_per_node FROM runs r LEFT JOIN clusters c USING (cluster)
                               WHERE r.run = ?""", [run])
    if rows.height:
        return rows.row(0, named=True)
    if not store.frame(con, "SELECT 1 FROM attempts WHERE run = ? LIMIT 1", [run]).height:
        raise KeyError(f"no run {run!r}")
    return {"run": run}


def _origin(ev: pl.DataFrame, incident_id: str) -> str:
    """`incident X, file:line` of an incident's top evidence line, for error messages."""
    top = ev.filter(pl.col("incident_id") == incident_id).head(1)
    where = f", {top['file'][0]}:{top['line'][0]}" if top.height else ""
    return f"incident {incident_id}{where}"


def _evidence(ev: pl.DataFrame, incident_id: str, n: int) -> list[dict]:
    rows = ev.filter(pl.col("incident_id") == incident_id).sort("rank_in_incident").head(n)
    return [_evidence_line(r) for r in rows.to_dicts()]


def _evidence_line(r: dict) -> dict:
    """One evidence line as the plan's JSON gives it (times in ISO 8601)."""
    return {k: (r[k].isoformat() if isinstance(r[k], dt.datetime) else r[k])
            for k in ("source", "file", "line", "ts", "host", "text")}


def _reason(row: dict, ev: pl.DataFrame) -> str:
    """`GPU lost from the PCIe bus (Xid 79) at 2026-11-24 08:20:25; recommended: drain node`."""
    mode = taxonomy.MODES.get(row["failure_mode"])
    top = ev.filter(pl.col("incident_id") == row["incident_id"]).sort("rank_in_incident").head(1)
    xid = top["xid"][0] if top.height and "xid" in top.columns else None
    what = (mode.description if mode else row["failure_mode"]) + (f" (Xid {xid})" if xid is not None else "")
    when = f" at {row['root_ts']:%Y-%m-%d %H:%M:%S}" if row.get("root_ts") else ""
    return f"{what}{when}; recommended: {row['action']}"


def _incident_hosts(inc: pl.DataFrame, ev: pl.DataFrame, run: str, states: pl.DataFrame, ps: PlanSettings,
                    warnings: list[str]) -> list[Exclusion]:
    """Root-cause hosts of the run's incidents whose recommended action drains a node or resets a GPU."""
    if not inc.height:
        return []
    hit = inc.filter(pl.col("run") == run, pl.col("host").is_not_null(),
                     pl.col("action").fill_null("").str.contains(f"^(?:{'|'.join(DRAIN_ACTIONS)})"))
    out: dict[str, Exclusion] = {}
    for row in hit.sort("root_ts", descending=True, nulls_last=True).to_dicts():
        host = check_host(row["host"], _origin(ev, row["incident_id"]))
        if host in out:
            continue
        back = _resumed_at(states, host, row.get("root_ts"))
        if back is not None:
            warnings.append(f"{host} ({row['incident_id']}) returned to service at {back:%Y-%m-%d %H:%M:%S}: "
                            "not excluded")
            continue
        out[host] = Exclusion(host, _reason(row, ev), row["failure_mode"], row["incident_id"],
                              _evidence(ev, row["incident_id"], ps.evidence_lines))
    return sorted(out.values(), key=lambda e: e.host)


def _repeat_offenders(inc: pl.DataFrame, ev: pl.DataFrame, already: set[str], ps: PlanSettings,
                      episodes: pl.DataFrame | None = None) -> list[Exclusion]:
    """Hosts at the root of `repeat_after` or more faults, in any run: host-attributable incidents, and the fault
    episodes of the fleet's repair records that are not those incidents (`account.fleet.episode_faults`)."""
    own = inc.filter(pl.col("host").is_not_null(), pl.col("action").fill_null("none") != "none") if inc.height \
        else pl.DataFrame(schema={"host": pl.String, "root_ts": pl.Datetime("us"), "incident_id": pl.String,
                                  "failure_mode": pl.String})
    counts = (own.sort("root_ts", descending=True, nulls_last=True).group_by("host", maintain_order=True)
              .agg(pl.len().alias("n"), pl.col("incident_id").first(), pl.col("failure_mode").first(),
                   pl.col("failure_mode").unique().sort().alias("modes"), pl.col("incident_id").alias("all_ids")))
    eps = episodes if episodes is not None and episodes.height else None
    if eps is not None:
        counts = counts.join(eps.sort("ts", descending=True).group_by("host", maintain_order=True).agg(
            n_ep=pl.len(), ep_mode=pl.col("failure_mode").first(), ep_modes=pl.col("failure_mode").unique().sort()),
            on="host", how="full", coalesce=True)
    else:
        counts = counts.with_columns(n_ep=pl.lit(0, pl.UInt32), ep_mode=pl.lit(None, pl.String),
                                     ep_modes=pl.lit([], pl.List(pl.String)))
    counts = counts.with_columns(total=pl.col("n").fill_null(0) + pl.col("n_ep").fill_null(0)).filter(
        pl.col("total") >= ps.repeat_after, ~pl.col("host").is_in(sorted(already)))
    out = []
    for r in counts.sort("host").to_dicts():
        mine = eps.filter(pl.col("host") == r["host"]) if eps is not None and r["n_ep"] else None
        origin = (_origin(ev, r["incident_id"]) if r["incident_id"] is not None
                  else f"fault episode {mine['file'][0]}:{mine['line'][0]}")
        host = check_host(r["host"], origin)
        evidence = [line for i in (r["all_ids"] or []) for line in _evidence(ev, i, 1)]
        evidence += [_evidence_line(e) for e in (mine.head(ps.evidence_lines).to_dicts() if mine is not None else [])]
        what = [f"{r['n']} incidents"] if r["n"] else []
        what += [f"{r['n_ep']} fault episodes"] if r["n_ep"] else []
        modes = sorted({m or "unknown" for m in [*(r["modes"] or []), *(r["ep_modes"] or [])]})
        out.append(Exclusion(host, f"repeat offender: {' and '.join(what)} in {ps.history_days:g} days "
                                   f"({', '.join(modes)})",
                             r["failure_mode"] or r["ep_mode"] or "node_failure", r["incident_id"], evidence))
    return out


def _no_incident(e: Exclusion) -> str:
    """What a drain reason names for an exclusion that no incident made: its fault history, or a preflight."""
    return "fault history" if e.reason.startswith("repeat offender") else "preflight"


def _preflight_failures(con: duckdb.DuckDBPyConnection, since: dt.datetime | None,
                        already: set[str]) -> list[Exclusion]:
    """Hosts whose latest recorded preflight check failed (events of source `preflight` or kind `preflight*`)."""
    rows = store.frame(con, """
        SELECT e.host, e.ts, e.kind, e.severity, e.failure_mode, e.text, e.source, f.path AS file, e.line
        FROM events e JOIN ingested_files f USING (file_id)
        WHERE (e.source = 'preflight' OR e.kind LIKE 'preflight%') AND e.host IS NOT NULL
          AND ($since IS NULL OR e.ts >= $since)
        QUALIFY row_number() OVER (PARTITION BY e.host ORDER BY e.ts DESC NULLS LAST, e.line DESC) = 1
        ORDER BY e.host""", {"since": since})
    failed = rows.filter(pl.col("severity").is_in(["error", "critical"]), ~pl.col("host").is_in(sorted(already)))
    out = []
    for r in failed.to_dicts():
        host = check_host(r["host"], f"preflight record {r['file']}:{r['line']}")
        out.append(Exclusion(host, f"failed preflight: {r['text']}"[:200], r["failure_mode"] or "unknown", None,
                             [_evidence_line(r)]))
    return out


def _scheduler_states(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Node drain / down / resume events from the scheduler's logs, oldest first."""
    return store.frame(con, """SELECT host, ts, kind FROM events
                               WHERE kind IN ('slurm_node_drain', 'slurm_node_down', 'slurm_node_resume')
                                 AND host IS NOT NULL AND ts IS NOT NULL ORDER BY ts""")


def _drained_at(states: pl.DataFrame, host: str) -> dt.datetime | None:
    """When the scheduler last set `host` drained or down, unless it was resumed since."""
    mine = states.filter(pl.col("host") == host)
    if not mine.height or mine["kind"][-1] not in _DRAINED_KINDS:
        return None
    return mine["ts"][-1]


def _resumed_at(states: pl.DataFrame, host: str, after: dt.datetime | None) -> dt.datetime | None:
    """When `host` was returned to service after `after` (and stayed so), if it was."""
    mine = states.filter(pl.col("host") == host)
    if after is None or not mine.height or mine["kind"][-1] != "slurm_node_resume" or mine["ts"][-1] <= after:
        return None
    return mine["ts"][-1]


def _incident_key(inc: pl.DataFrame, run: str, last: pl.DataFrame) -> str:
    """The incident at the end of the run's last attempt; a per-attempt key when none was found."""
    attempt = int(last["attempt"][0]) if last.height else 0
    if inc.height:
        end = inc.filter(pl.col("run") == run, pl.col("kind") == "attempt_end", pl.col("attempt") == attempt)
        if end.height:
            return end["incident_id"][0]
    return f"{run}:{attempt}:relaunch"


_SAVES_SQL = """
    SELECT step, max(ts) AS ts, any_value(path) AS path FROM checkpoints
    WHERE run = ? AND action = 'save' AND step IS NOT NULL AND coalesce(ok, true) GROUP BY step"""


def choose_checkpoint(con: duckdb.DuckDBPyConnection, run: str, checkpoint_dir: str | None) -> Checkpoint:
    """The newest verified checkpoint of `run`; newer ones missing or corrupt go to `skipped`."""
    logged = {r["step"]: r for r in store.frame(con, _SAVES_SQL, [run]).to_dicts()}
    if checkpoint_dir:
        check_path(checkpoint_dir, f"checkpoint_dir of run {run!r}")
    root = Path(checkpoint_dir) if checkpoint_dir else None
    if root is None or not root.is_dir():
        return _unverified(logged, checkpoint_dir)
    on_disk = ckpts.step_dirs(root)
    skipped = []
    for step in sorted(set(logged) | set(on_disk), reverse=True):
        saved = logged.get(step)
        when = f" at {saved['ts']:%Y-%m-%d %H:%M:%S}" if saved and saved["ts"] else ""
        if step not in on_disk:
            skipped.append({"step": step, "path": None, "failure_mode": "checkpoint_lost",
                            "reason": f"logged as saved{when} but not in {checkpoint_dir}"})
            continue
        path = check_path(str(on_disk[step]), "the checkpoint directory")
        verdict = ckpts.verify(on_disk[step])
        if verdict.ok:
            return Checkpoint(step, path, True, skipped)
        mode = "checkpoint_lost" if saved else "incomplete"
        skipped.append({"step": step, "path": path, "failure_mode": mode,
                        "reason": f"{verdict.problem}" + (f" (logged as saved{when})" if saved else "")})
    return Checkpoint(None, None, False, skipped, note="no intact checkpoint: the relaunch starts from scratch")


def _unverified(logged: dict, checkpoint_dir: str | None) -> Checkpoint:
    """The newest logged save, unverified: the checkpoint directory is not reachable from here."""
    if not logged:
        return Checkpoint(None, None, False, note="no checkpoint recorded: the relaunch starts from scratch")
    step = max(logged)
    path = logged[step]["path"]
    try:
        path = check_path(path, "a checkpoint save line") if path else checkpoint_dir
    except UnsafeValueError:
        path = checkpoint_dir  # a log line's path is data: never let a strange one into the command
    why = f"{checkpoint_dir} is not reachable from here" if checkpoint_dir else "run.toml gives no checkpoint_dir"
    return Checkpoint(step, path, False, note=f"checkpoint at step {step} not verified: {why}")


def _nodes(con: duckdb.DuckDBPyConnection, info: dict, last: pl.DataFrame, excluded: set[str], states: pl.DataFrame,
           warnings: list[str]) -> tuple[int | None, int | None, list[str]]:
    """Nodes the job needs, healthy nodes of its cluster (not excluded, not drained), and their names."""
    gpus, per_node = info.get("gpus"), info.get("gpus_per_node")
    needed = math.ceil(gpus / per_node) if gpus and per_node else _nodes_in_command(info.get("launch_command"))
    if needed is None and last.height and last["n_hosts"][0]:
        needed = int(last["n_hosts"][0])
    hosts = [r[0] for r in con.execute("SELECT host FROM nodes WHERE cluster = ? ORDER BY host",
                                       [info.get("cluster")]).fetchall()] if info.get("cluster") else []
    down = {h for h in states["host"].unique().to_list() if _drained_at(states, h) is not None}
    healthy = [h for h in hosts if h not in excluded and h not in down]
    bad = [h for h in healthy if not _plain_host(h)]
    if bad:
        warnings.append(f"inventory hosts left out as not plain hostnames: {', '.join(map(repr, bad))}")
        healthy = [h for h in healthy if h not in bad]
    available = len(healthy) if hosts else None
    if needed is not None and available is not None and available < needed:
        warnings.append(f"only {available} healthy nodes for the {needed} the job needs")
    return needed, available, healthy


def _plain_host(h: str) -> bool:
    try:
        check_host(h)
    except UnsafeValueError:
        return False
    return True


def _nodes_in_command(command: str | None) -> int | None:
    """`--nodes=4`, `--nodes 2-4`, `-N4`, `--nnodes 2` in the launch command: the (minimum) node count."""
    m = re.search(r"(?:--nodes|--nnodes|-N)[=\s]?(\d+)", command or "")
    return int(m.group(1)) if m else None


def _default_backend(info: dict) -> str:
    launcher = (info.get("launcher") or "").lower()
    if launcher in BACKENDS:
        return launcher
    first = (info.get("launch_command") or "").split()[:1]
    return "torchrun" if first and "torchrun" in first[0] else "slurm"


def _launch_argv(info: dict, warnings: list[str]) -> list[str]:
    """run.toml's launch_command as an argument list (split like a shell, never given to one)."""
    text = info.get("launch_command") or ""
    try:
        return shlex.split(text)
    except ValueError as e:
        warnings.append(f"launch_command cannot be split into arguments: {e}")
        return []


def _job_names(run: str, info: dict) -> list[str]:
    """The names the run's scheduler jobs go by: the run's, and the launch command's --job-name."""
    m = re.search(r"(?:--job-name|-J)[=\s]?(\S+)", info.get("launch_command") or "")
    return [run, m.group(1)] if m else [run]


def _previous_job(con: duckdb.DuckDBPyConnection, run: str, info: dict) -> str | None:
    """The scheduler job id of the run's newest job record (matched by job name), if the store has one."""
    names = _job_names(run, info)
    rows = con.execute("""SELECT job_id FROM jobs WHERE list_contains(?, job_name) AND regexp_full_match(job_id, '\\d+')
                          ORDER BY coalesce(start_ts, ts) DESC NULLS LAST LIMIT 1""", [names]).fetchall()
    return rows[0][0] if rows else None


def _recompute_gpu_hours(con: duckdb.DuckDBPyConnection, run: str, step: int | None, info: dict) -> float:
    """GPU-hours to redo: each step after the checkpoint, at the time its latest attempt took for it."""
    row = con.execute("""
        WITH r AS (SELECT attempt, step, max(step_s) AS step_s FROM rank_steps
                   WHERE run = $run AND step > $step GROUP BY ALL),
        s AS (SELECT * FROM r UNION ALL
              SELECT attempt, step, max(step_s) FROM steps
              WHERE run = $run AND step > $step AND attempt NOT IN (SELECT attempt FROM r) GROUP BY ALL),
        latest AS (SELECT step, arg_max(step_s, attempt) AS step_s FROM s GROUP BY step)
        SELECT sum(coalesce(step_s, (SELECT median(step_s) FROM s))),
               (SELECT max(rank) + 1 FROM rank_steps WHERE run = $run) FROM latest
    """, {"run": run, "step": step if step is not None else 0}).fetchall()[0]
    seconds, ranks = row if row else (None, None)
    gpus = info.get("gpus") or ranks or 1
    return round(float(seconds or 0.0) * gpus / 3600.0, 4)
