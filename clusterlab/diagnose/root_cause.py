"""Why each attempt ended, reasoned from progress: the step timeline, the exit and the scheduler's verdict.

Evidence is a candidate cause of an attempt's end only if it is consistent with the step timeline:
- evidence after which the job (the ranks on its host included) kept stepping did not end the
  attempt: it is rejected, with the reason, and stays in the host's history (events are untouched);
- the scheduler's verdict (time limit, preemption, a user's cancel, node failure) explains an end
  when the job was healthy until the kill; a fault that stopped progress before it still wins, and
  a kill that found the job already hung is that hang, with the hang's own cause;
- evidence that comes after the scheduler's verdict is a consequence of the kill;
- among what is left the tiers of `incidents.TIERS` rank, a fault before (or at) the loss of
  progress before one that came later, and within a tier the earliest line wins;
- a shared filesystem server that several hosts report at once is blamed as that server.
Clocks of different hosts are allowed `Settings.skew_s` apart. See docs/attribution.md.
"""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import (
    echoes,
    fabric,
    incidents,
    load_failures,
    maintenance,
    onsets,
    progress,
    refinements,
    sdc,
    sticky,
    stopped_first,
    task_hosts,
    timeline,
    undated,
)

# The scheduler's verdicts; KILLS end a job that may have been healthy until then.
KILLS = ("time_limit", "preemption", "manual_stop")
VERDICT_SOURCES = ("slurm", "slurmctld", "sacct")
# sacct / jobcomp State (without the ` by UID` suffix) → the verdict it states
SACCT_VERDICTS = {"TIMEOUT": "time_limit", "DEADLINE": "time_limit", "PREEMPTED": "preemption",
                  "NODE_FAIL": "node_failure", "CANCELLED": "manual_stop"}
_TIERS = dict(incidents.TIERS_BY_MODE)
# Faults that happen on one machine's devices: a hostless line of one (a job log's `[default1]: CUDA error:
# uncorrectable ECC error`, whose host the launcher's summary may not name) is the fault the one host that reports
# the same mode in the attempt (its kernel's Xid) saw. Not a hang or a shared service: the host printing those is
# often a symptom.
LOCAL_MODES = frozenset({"gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error",
                         "host_hw", "cuda_error", "cuda_oom", "host_oom", "gpu_throttle", "silent_data_corruption"})
RAISED_BY_ALL = ("user_code_error", "cuda_error", "cuda_oom")  # the user's errors: on many hosts, no host's
_EV_COLS = ["run", "attempt", "ts", "host", "source", "kind", "failure_mode", "xid", "rank", "peer", "file", "line",
            "text", "tier", "detail"]


def _sacct_verdicts(con: duckdb.DuckDBPyConnection, run: str | None) -> pl.DataFrame:
    """Per attempt, the verdict of the scheduler record that contains it (named in its logs, or named after
    the run); only the last attempt inside one allocation gets it."""
    states = ", ".join(f"('{k}', '{v}')" for k, v in SACCT_VERDICTS.items())
    return store.frame(con, f"""
        WITH a AS (SELECT run, attempt, start_ts, end_ts FROM attempts WHERE ($run IS NULL OR run = $run)),
        {store.NAMED_JOBS},
        v(state, mode) AS (VALUES {states}),
        -- each instance of a job (a requeued job has one row per instance under one JobID: `sacct -D`)
        j AS (SELECT DISTINCT ON (job_id, start_ts) j.*, j.start_ts AS job_start, j.end_ts AS job_end,
                     f.path AS file, v.mode
              FROM jobs j JOIN ingested_files f USING (file_id) JOIN v ON split_part(j.state, ' ', 1) = v.state
              WHERE NOT contains(j.job_id, '.') AND j.end_ts IS NOT NULL ORDER BY job_id, start_ts, j.line),
        -- matched as timeline.attempt_spans matches them
{timeline.MATCHED_JOBS}
        SELECT run, attempt, end_ts AS ts, NULL::VARCHAR AS host, 'sacct' AS source, 'sacct_state' AS kind,
               mode AS failure_mode, NULL::INTEGER AS xid, NULL::INTEGER AS rank, NULL::VARCHAR AS peer, file, line,
               'JobID ' || job_id || ' State ' || state AS text, NULL::VARCHAR AS detail
        FROM best QUALIFY a_end = max(a_end) OVER (PARTITION BY run, job_id, start_ts)
    """, {"run": run}).with_columns(tier=pl.col("failure_mode").replace_strict(_TIERS, return_dtype=pl.Int32))


def _service(row: dict) -> str | None:
    """The shared service a filesystem line names: the NFS server or the Lustre target (from the kernel's detail).

    It is blamed under its own name, as a host: the server is a machine of the provider's like any node."""
    try:
        d = json.loads(row.get("detail") or "{}")
    except ValueError:
        return None
    if d.get("server"):
        return str(d["server"])
    if d.get("target"):
        return str(d["target"])
    return None


def attempt_end_incidents(con: duckdb.DuckDBPyConnection, run: str | None = None,
                          settings: incidents.Settings | None = None, *, profile: pl.DataFrame | None = None,
                          reference: bool = False, clocks: pl.DataFrame | None = None
                          ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One incident per attempt that ended badly (with `confidence` and `rejected`), and its evidence.

    `profile` is `timeline.rank_profile(con, run)` and `clocks` `timeline.host_clocks(con, run)` where the caller
    has them already (see `progress.step_records`);
    `reference` decides every attempt one at a time (`_decide`), as the set-wise path is checked against."""
    s = settings or incidents.Settings()
    att = store.frame(con, """
        SELECT run, attempt, start_ts, end_ts, hosts, attempt = max(attempt) OVER (PARTITION BY run) AS is_last
        FROM attempts WHERE ($run IS NULL OR run = $run) ORDER BY run, attempt""", {"run": run})
    cand = incidents.with_hosts(con, incidents.candidates(con, run, s, profile))
    # a resume dying on the checkpoint it follows
    cand = refinements.refined("the failed-resume rule", lambda: load_failures.lost_on_load(con, cand), cand)
    # each host's lines on the run's clock, where the moments all hosts share measure how far off it is
    if clocks is None and run is not None and cand.height:
        clocks = timeline.host_clocks(con, run)
    if clocks is not None and cand.height:
        cand = timeline.on_log_clock(cand, clocks)
    first = refinements.refined("the stopped-first rule", lambda: stopped_first.suspects(
        con, run, s.hang_min_s, s.hang_steps, profile), pl.DataFrame())
    if first.height:  # the rank that stopped first in a hang: what the others print after it are symptoms
        cand = pl.concat([cand, first.with_columns(peer_host=pl.lit(None, pl.String))], how="diagonal_relaxed")
    sacct = _sacct_verdicts(con, run)
    if sacct.height:
        cand = pl.concat([cand, sacct.with_columns(peer_host=pl.lit(None, pl.String))], how="diagonal_relaxed")
    skew = dt.timedelta(seconds=s.skew_s)
    job, host = progress.step_records(con, run, cand, skew, profile, clocks)
    cand = progress.steps_after(cand, job, ["run", "attempt"], skew, "job")
    cand = progress.steps_after(cand, host, ["run", "attempt", "host"], skew, "host")
    cand = progress.steps_later_in_file(con, run, cand)
    last = (job.group_by("run", "attempt").agg(last_ts=pl.col("ts").max(), last_step=pl.col("step").max(),
                                               gap_s=pl.col("ts").sort().diff().dt.total_seconds().median())
            if job.height else pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int32, "last_ts": pl.Datetime("us"),
                                                     "last_step": pl.Int64, "gap_s": pl.Float64}))
    att = att.join(last, on=["run", "attempt"], how="left").join(_open_saves(con, run), on=["run", "attempt"],
                                                                  how="left")
    # a rank's death echoed by its peers' failed transfers to it: those are symptoms of it (`echoes`)
    cand = refinements.refined("the echo rule", lambda: echoes.as_symptoms(_with_progress_flags(cand, s)).select(
        cand.columns), cand)
    keys = ["run", "attempt"]
    flagged = (_with_progress_flags(cand, s).sort(*keys, "ts", "file", "line")
               .with_columns(_id=pl.int_range(pl.len()).over(keys).cast(pl.UInt32)))
    # Attempts with a live scheduler verdict take the per-attempt path (`_decide`); all others are decided
    # set-wise by `_decide_all`, which gives the same result (tests/test_root_cause_setwise.py).
    per_attempt = (att.select(keys) if reference else
                   flagged.filter(pl.col("is_verdict") & ~pl.col("progressed")).select(keys).unique())
    fast = att.join(per_attempt, on=keys, how="anti")
    rows, ev_fast = _decide_all(fast, flagged.join(fast.select(keys), on=keys, how="semi"), s, con)
    evs = [ev_fast]
    slow = att.join(per_attempt, on=keys, how="semi")
    # the candidates of each attempt, split once (filtering all of them per attempt is quadratic)
    mine = cand.join(slow.select(keys), on=keys, how="semi") if slow.height else cand.clear()
    by_attempt = mine.partition_by(keys, as_dict=True) if mine.height else {}
    empty = cand.clear()
    for a in slow.iter_rows(named=True):  # NOTE: one pass per attempt, the rows of each are frames
        c = by_attempt.get((a["run"], a["attempt"]), empty)
        inc, ev = _decide(a, c, s, con)
        if inc is not None:
            rows.append(inc)
            evs.append(ev.with_columns(run=pl.lit(a["run"], pl.String), attempt=pl.lit(a["attempt"], pl.Int32))
                       .select(*keys, *EVIDENCE_SCHEMA) if ev.height else None)
    inc = (pl.DataFrame(rows, schema=INCIDENT_SCHEMA).sort(keys) if rows else pl.DataFrame(schema=INCIDENT_SCHEMA))
    evs = [e.cast(EVIDENCE_SCHEMA) for e in evs if e is not None and e.height]
    # each part is in (run, attempt, rank_in_incident) order already: one part needs no sort of its rows
    ev = (pl.DataFrame(schema={"run": pl.String, "attempt": pl.Int32, **EVIDENCE_SCHEMA}) if not evs else evs[0]
          if len(evs) == 1 else pl.concat(evs, how="vertical_relaxed").sort(*keys, "rank_in_incident"))
    inc = refinements.refined("the divergence-onset rule", lambda: _divergence_onsets(con, inc), inc)
    inc = refinements.refined("the line-onset rule", lambda: onsets.line_onsets(con, inc, s.divergence_chain_s), inc)
    inc = refinements.refined("the open-save-onset rule", lambda: onsets.open_save_onsets(con, inc), inc)
    inc = refinements.refined("the request-sent-onset rule", lambda: onsets.request_sent_onsets(con, inc, s.window_s),
                              inc)
    inc = refinements.refined("the kill-onset rule", lambda: onsets.kill_onsets(con, inc, s.window_s), inc)
    inc = refinements.refined("the node-loss-onset rule", lambda: onsets.node_loss_onsets(con, inc), inc)
    inc, ev = refinements.refined("the sticky-fault rule", lambda: sticky.with_sticky_faults(
        con, inc, ev, EVIDENCE_SCHEMA), (inc, ev))
    inc, ev = refinements.refined("the maintenance rule", lambda: maintenance.with_maintenance(
        con, inc, ev, EVIDENCE_SCHEMA), (inc, ev))
    inc, ev = refinements.refined("the silent-data-corruption rule", lambda: sdc.with_silent_corruption(
        con, inc, ev, EVIDENCE_SCHEMA, clocks), (inc, ev))
    return inc, ev.select(list(EVIDENCE_SCHEMA))


def _divergence_onsets(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame) -> pl.DataFrame:
    """A loss that diverged and never came back began at its spike: the root of such an attempt's end is the start of
    the spike's step on the step clock, not the restatement at the log's last step row that won (training_health
    restates it there so that nothing steps past it), and not the borrowed time of an undated iteration line.
    What the job did after the onset trained on a diverged loss (hang, like a hung job's wait for its watchdog)."""
    div = inc.filter(pl.col("failure_mode") == "loss_divergence", pl.col("kind") == "attempt_end")
    if not div.height:
        return inc
    spikes = store.frame(con, """
        SELECT run, attempt::INTEGER AS attempt,
               min(coalesce(try_cast(json_extract_string(detail, '$.spike_step') AS BIGINT),
                            try_cast(json_extract_string(detail, '$.step') AS BIGINT))) AS step
        FROM events WHERE source = 'training_health' AND run IN (SELECT DISTINCT run FROM div)
          AND (kind = 'loss_not_recovered' OR json_extract_string(detail, '$.outcome') = 'diverged')
        GROUP BY ALL HAVING step IS NOT NULL""", div=div.select("run", "attempt"))
    if not (spikes := onsets.climb_starts(con, spikes)).height:  # a slow climb began before the spike
        return inc
    dated = []
    for run in spikes["run"].unique().to_list():  # NOTE: one step clock per run with a diverged attempt
        logged = timeline.logged_steps(con, run).select(
            pl.col("attempt").cast(pl.Int32), "step", "ts", "step_s").sort("attempt", "step", "ts")
        dated.append(onsets.spike_onsets(logged, spikes.filter(pl.col("run") == run)))
    found = pl.concat(dated).drop_nulls()
    return (inc.join(found, on=["run", "attempt"], how="left")
            .with_columns(root_ts=pl.when((pl.col("failure_mode") == "loss_divergence")
                                          & (pl.col("kind") == "attempt_end") & (pl.col("onset") < pl.col("root_ts")))
                          .then(pl.col("onset")).otherwise(pl.col("root_ts")))
            .drop("onset"))


def _open_saves(con: duckdb.DuckDBPyConnection, run: str | None) -> pl.DataFrame:
    """Per attempt, when its last checkpoint save that never finished began (`open_save_ts`): a job killed while
    writing one was busy, not hung, however long the write took (a slow filesystem stretches a save to minutes)."""
    return store.frame(con, """
        SELECT run, attempt, max(ts) AS open_save_ts FROM (
            SELECT run, attempt, step, min(ts) AS ts FROM checkpoints
            WHERE action = 'save' AND ts IS NOT NULL AND run IS NOT NULL AND ($run IS NULL OR run = $run)
            GROUP BY ALL HAVING NOT bool_or(coalesce(ok, true)))
        GROUP BY ALL""", {"run": run}).cast({"attempt": pl.Int32})


_CAND = pl.Struct({"failure_mode": pl.String, "host": pl.String, "ts": pl.String, "kind": pl.String,
                   "file": pl.String, "line": pl.Int64})
REJECTED = pl.List(pl.Struct({"candidate": _CAND, "reason": pl.String}))
INCIDENT_SCHEMA = {"incident_id": pl.String, "run": pl.String, "attempt": pl.Int32, "kind": pl.String,
                   "root_ts": pl.Datetime("us"), "exit_ts": pl.Datetime("us"), "failure_mode": pl.String,
                   "host": pl.String, "rank": pl.Int32, "tier": pl.Int32, "confidence": pl.Float64,
                   "rejected": REJECTED}
EVIDENCE_SCHEMA = {"incident_id": pl.String, "rank_in_incident": pl.Int64, "ts": pl.Datetime("us"), "host": pl.String,
                   "source": pl.String, "kind": pl.String, "failure_mode": pl.String, "xid": pl.Int32,
                   "rank": pl.Int32, "file": pl.String, "line": pl.Int64, "text": pl.String, "tier": pl.Int32}


def _decide(a: dict, c: pl.DataFrame, s: incidents.Settings, con: duckdb.DuckDBPyConnection
            ) -> tuple[dict | None, pl.DataFrame]:
    """The cause of one attempt's end, its evidence, its confidence and the rejected candidates."""
    last, gap = a["last_ts"], a["gap_s"] or 0.0
    skew = dt.timedelta(seconds=s.skew_s)
    c = _with_progress_flags(c, s).sort("ts", "file", "line")
    reasons: dict[int, str] = {}
    c = c.with_row_index("_id")
    for r in c.filter("progressed").iter_rows(named=True):
        who = f"{r['host']}'s ranks and the job" if r["host"] else "all ranks"
        reasons[r["_id"]] = progress.stepped_past(who, r)
    live = c.filter(~pl.col("progressed"))
    verdicts = live.filter("is_verdict").sort(pl.col("source") == "sacct", pl.col("kind") == "slurm_node_fail",
                                              "ts", "line")
    verdict = None
    if verdicts.height:
        sacct = verdicts.filter(pl.col("source") == "sacct")
        mode = sacct["failure_mode"][0] if sacct.height else verdicts["failure_mode"][0]
        same = verdicts.filter(pl.col("failure_mode") == mode)
        verdict = same.row(0, named=True)
        verdict["ts"] = same["ts"].min()
        hosts = same["host"].drop_nulls()
        verdict["host"] = verdict["host"] or (hosts[0] if hosts.len() else None)  # sacct names no node
        for r in verdicts.filter(pl.col("failure_mode") != mode).iter_rows(named=True):
            reasons[r["_id"]] = f"the scheduler's own record says {mode}"
    hang_gap = dt.timedelta(seconds=max(s.hang_steps * gap, s.hang_min_s))
    loss = last + dt.timedelta(seconds=max(s.late_steps * gap, s.late_min_s)) if last else None
    faults = live.filter(~pl.col("is_verdict"), ~pl.col("symptom"))
    symptoms = live.filter(~pl.col("is_verdict"), pl.col("symptom"))
    healthy = False
    if verdict is not None:
        vts = verdict["ts"]
        for r in live.filter(~pl.col("is_verdict"), pl.col("ts") > vts + skew).iter_rows(named=True):
            reasons[r["_id"]] = f"after the scheduler's {verdict['failure_mode']} at {vts:%H:%M:%S}: a consequence"
        faults = faults.filter(pl.col("ts") <= vts + skew)
        symptoms = symptoms.filter(pl.col("ts") < vts - skew)
        # a save begun after the last step and still open at the kill: the job was writing, not hung
        saving = (last is not None and a.get("open_save_ts") is not None
                  and last - skew - hang_gap <= a["open_save_ts"] <= vts + skew)
        # NOTE: a launcher relaying the kill's signal to its workers (`Received 15 death signal`) is the kill's
        # consequence, even where its host's clock puts it minutes before the scheduler's line: no sign of a hang
        hanging = symptoms.filter(pl.col("kind").ne_missing("agent_signal"))
        hung = last is not None and ((vts - last > hang_gap and not saving) or hanging.height > 0)
        healthy = verdict["failure_mode"] in KILLS and not hung
        if healthy:  # the job stepped until the kill: what it stepped past did not stop it
            # ... except a loss that never came back: stepping on a diverged loss is no health, and a person's
            # stop of such a job is the stop of a divergence
            why = (pl.col("kind") == "loss_not_recovered") & (verdict["failure_mode"] == "manual_stop")
            for r in faults.filter(pl.col("n_after") > 0, ~why).iter_rows(named=True):
                reasons[r["_id"]] = (f"the job kept stepping after it until the scheduler's "
                                     f"{verdict['failure_mode']} at {vts:%H:%M:%S}")
            faults = faults.filter((pl.col("n_after") == 0) | why)
    late = pl.lit(False) if loss is None else pl.col("ts") > loss
    faults = faults.with_columns(late=late).sort("late", pl.col("tier").neg(), "ts", "file", "line")
    conf_base, host, mode, winner = 0.1, None, "unknown", None
    named = (faults.filter(pl.col("tier") == incidents.PEER_TIER, pl.col("peer_host").is_not_null())
             .group_by("peer_host").len().sort(["len", "peer_host"], descending=[True, False]))
    peer = named["peer_host"][0] if named.height else None  # the host the peers' network errors name most
    # The scheduler's node failure comes late by design (a node is DOWN only after SlurmdTimeout without an
    # answer): it explains the peers' network errors about that node, and only a hardware fault outranks it.
    node_down = verdict is not None and verdict["failure_mode"] == "node_failure"
    if node_down and (not faults.height or (faults["tier"][0] or 0) < incidents.NODE_TIER):
        winner, mode = verdict, "node_failure"
        host, conf_base = verdict["host"] or peer, 0.8
    elif faults.height:
        winner = faults.row(0, named=True)
        mode, host = winner["failure_mode"], winner["host"]
        if winner["tier"] in incidents.PEER_TIERS:  # one host at an end of every error pair, or the fabric
            host = fabric.endpoints(faults).get((a["run"], a["attempt"]), peer or host)
        if host is None and mode in LOCAL_MODES:
            hosts = faults.filter(pl.col("failure_mode") == mode)["host"].drop_nulls().unique()
            host = (hosts[0] if hosts.len() == 1
                    else task_hosts.failed_tasks(con, a["run"]).get((a["run"], a["attempt"])))
        conf_base = (0.5 if winner["late"] else 0.9) - fabric.penalty(winner["tier"], host)
        if mode in ("time_limit", "manual_stop"):
            host = None
    elif verdict is not None and healthy:
        winner = verdict
        mode = verdict["failure_mode"]
        host = verdict["host"] if mode in ("node_failure", "preemption") else None
        conf_base = 0.9 if healthy else 0.7
    elif symptoms.height:
        winner = symptoms.sort(pl.col("tier").neg(), "ts").row(0, named=True)
        mode, conf_base = winner["failure_mode"], 0.3
    elif verdict is not None:  # killed while hung, nothing printed about why
        winner, conf_base = verdict, 0.2
    elif a["is_last"]:
        return None, pl.DataFrame()  # the last attempt with nothing wrong near its end simply finished
    if winner is not None and mode in ("filesystem_io", "network"):
        host, shared = _shared_service(con, winner, host, a["end_ts"], s)
        if shared:
            conf_base = 0.8
    if task_hosts.nobodys(con, a, winner, mode, RAISED_BY_ALL):
        host = None
    # everything not supporting the winner is a runner-up, with why it lost
    wid = winner["_id"] if winner else None
    is_winner = pl.col("_id").is_in([] if wid is None else [wid])
    supports = is_winner | pl.col("symptom")
    if winner is not None:  # the cause's other lines; for a shared service, every host's report of it
        same_host = pl.col("host").eq_missing(winner["host"]) | pl.lit(host != winner["host"])
        supports = supports | ((pl.col("failure_mode") == winner["failure_mode"]) & same_host)
        if host is not None:  # the peers' errors about the guilty host, and its rank that stopped first, support it
            supports = supports | pl.col("peer_host").eq_missing(host) | (
                (pl.col("kind") == "stopped_first") & pl.col("host").eq_missing(host))
    rest = c.filter(~pl.col("_id").is_in(list(reasons)), ~supports.fill_null(False))
    competitors = 0
    for r in rest.iter_rows(named=True):
        if winner is None:
            reasons[r["_id"]] = "no cause"
        elif r["is_verdict"]:
            reasons[r["_id"]] = f"the job had stopped stepping at {last:%H:%M:%S} before it" if last else "outranked"
        else:
            competitors += r["tier"] is not None and winner.get("tier") is not None and r["tier"] >= winner["tier"]
            reasons[r["_id"]] = (f"outranked by {winner['kind']} on {winner['host'] or 'the job'} at "
                                 f"{winner['ts']:%H:%M:%S}")
    confidence = max(0.05, conf_base - 0.3 * min(competitors, 1) - (0.1 if competitors > 1 else 0.0))
    iid = f"{a['run']}:{a['attempt']}:end"
    ev = c.filter(~pl.col("_id").is_in(list(reasons))).sort(~is_winner, pl.col("tier").neg(), "ts",
                                                             "file", "line")
    ev = ev.with_columns(incident_id=pl.lit(iid), rank_in_incident=pl.int_range(1, pl.len() + 1).cast(pl.Int64))
    rejected = _rejected(c, reasons, s.max_rejected)
    inc = {"incident_id": iid, "run": a["run"], "attempt": a["attempt"], "kind": "attempt_end",
           "root_ts": (undated.root(winner, live) or _root_time(winner, live)) if winner else a["end_ts"],
           "exit_ts": a["end_ts"], "failure_mode": mode,
           "host": host, "rank": _rank_of(winner, host), "tier": winner["tier"] if winner else None,
           "confidence": round(confidence, 2),
           "rejected": rejected}
    return inc, ev.select(list(EVIDENCE_SCHEMA))


def _with_progress_flags(cand: pl.DataFrame, s: incidents.Settings) -> pl.DataFrame:
    """The columns `_decide` derives from progress, for the candidates of every attempt at once."""
    c = cand.with_columns(
        n_after=pl.max_horizontal(pl.col("n_job"), pl.col("n_host").fill_null(0), pl.col("n_file").fill_null(0)),
        last_after=pl.max_horizontal("last_job", "last_host", "last_file"),
        # (a node drained for `Kill task failed` after the job is a symptom-tier consequence, no verdict on the job)
        is_verdict=(pl.col("failure_mode").is_in(KILLS + ("node_failure",)) & pl.col("source").is_in(VERDICT_SOURCES)
                    & (pl.col("tier") > incidents.SYMPTOM_TIER)),
        symptom=pl.col("tier") <= incidents.SYMPTOM_TIER,
    ).with_columns(progress_s=pl.max_horizontal((pl.col("last_after") - pl.col("ts")).dt.total_seconds(),
                                                pl.col("file_s")))
    progressed = (pl.col("n_after") >= s.progress_min_steps) & (pl.col("progress_s") >= s.progress_min_s)
    return c.with_columns(progressed=progressed.fill_null(False))


def _firsts(frame: pl.DataFrame, *order: pl.Expr | str) -> dict[tuple, dict]:
    """Per (run, attempt): the first row of `frame` in `order` (ties in the candidates' own order)."""
    if not frame.height:
        return {}
    top = frame.sort("run", "attempt", *order, "_id").group_by("run", "attempt", maintain_order=True).first()
    return {(r["run"], r["attempt"]): r for r in top.iter_rows(named=True)}


def _decide_all(att: pl.DataFrame, c: pl.DataFrame, s: incidents.Settings, con: duckdb.DuckDBPyConnection
                ) -> tuple[list[dict], pl.DataFrame]:
    """`_decide` for every attempt none of whose live candidates is a scheduler verdict, set-wise.

    `c` holds those attempts' candidates with `_with_progress_flags`, sorted by (run, attempt, ts, file, line)
    and numbered `_id` within each attempt. Python runs once per attempt, never once per candidate."""
    keys = ["run", "attempt"]
    live = c.filter(~pl.col("progressed"))
    loss = {}
    for a in att.iter_rows(named=True):  # NOTE: a few operations per attempt, none per candidate
        gap = a["gap_s"] or 0.0
        loss[(a["run"], a["attempt"])] = (a["last_ts"] + dt.timedelta(seconds=max(s.late_steps * gap, s.late_min_s))
                                          if a["last_ts"] else None)
    losses = pl.DataFrame({"run": [k[0] for k in loss], "attempt": [k[1] for k in loss], "_loss": list(loss.values())},
                          schema={"run": pl.String, "attempt": pl.Int32, "_loss": pl.Datetime("us")})
    faults = (live.filter(~pl.col("is_verdict"), ~pl.col("symptom")).join(losses, on=keys, how="left")
              .with_columns(late=(pl.col("ts") > pl.col("_loss")).fill_null(False)))
    first_fault = _firsts(faults, "late", pl.col("tier").neg(), "ts", "file", "line")
    first_symptom = _firsts(live.filter(~pl.col("is_verdict"), pl.col("symptom")), pl.col("tier").neg(), "ts")
    named = (faults.filter(pl.col("tier") == incidents.PEER_TIER, pl.col("peer_host").is_not_null())
             .group_by(*keys, "peer_host").len())
    peers = {(r["run"], r["attempt"]): r["peer_host"] for r in  # the host the peers' network errors name most
             named.sort([*keys, "len", "peer_host"], descending=[False, False, True, False])
             .group_by(keys, maintain_order=True).first().iter_rows(named=True)}
    ends = fabric.endpoints(faults)
    # per attempt and local mode, the one host whose faults report it (`LOCAL_MODES`)
    local = {(r["run"], r["attempt"], r["failure_mode"]): r["host"] for r in
             faults.filter(pl.col("failure_mode").is_in(list(LOCAL_MODES)), pl.col("host").is_not_null())
             .group_by(*keys, "failure_mode").agg(pl.col("host").unique()).filter(pl.col("host").list.len() == 1)
             .with_columns(pl.col("host").list.first()).iter_rows(named=True)}
    winners, incs = [], {}
    stamped, none = _stamped_by_attempt(live), live.clear()
    failed = task_hosts.failed_tasks(con, att["run"].unique().to_list())
    for a in att.iter_rows(named=True):
        k = (a["run"], a["attempt"])
        winner, host, mode, conf_base = None, None, "unknown", 0.1
        if k in first_fault:
            winner = first_fault[k]
            mode, host = winner["failure_mode"], winner["host"]
            if winner["tier"] in incidents.PEER_TIERS:  # one host at an end of every error pair, or the fabric
                host = ends.get(k, peers.get(k) or host)
            if host is None and mode in LOCAL_MODES:
                host = local.get((*k, mode)) or failed.get(k)
            conf_base = (0.5 if winner["late"] else 0.9) - fabric.penalty(winner["tier"], host)
            if mode in ("time_limit", "manual_stop"):
                host = None
        elif k in first_symptom:
            winner = first_symptom[k]
            mode, conf_base = winner["failure_mode"], 0.3
        elif a["is_last"]:
            continue  # the last attempt with nothing wrong near its end simply finished
        if winner is not None and mode in ("filesystem_io", "network"):
            host, shared = _shared_service(con, winner, host, a["end_ts"], s)
            if shared:
                conf_base = 0.8
        if task_hosts.nobodys(con, a, winner, mode, RAISED_BY_ALL):
            host = None
        incs[k] = {"incident_id": f"{a['run']}:{a['attempt']}:end", "run": a["run"], "attempt": a["attempt"],
                   "kind": "attempt_end", "exit_ts": a["end_ts"],
                   "root_ts": (undated.root(winner, live) or _root_time(winner, stamped.get(k, none))) if winner
                   else a["end_ts"],
                   "failure_mode": mode, "host": host, "rank": _rank_of(winner, host),
                   "tier": winner["tier"] if winner else None, "_conf": conf_base, "_winner": winner}
        winners.append({"run": a["run"], "attempt": a["attempt"], "_has_w": winner is not None,
                        "_wid": winner["_id"] if winner else None, "_wmode": winner["failure_mode"] if winner else None,
                        "_whost": winner["host"] if winner else None, "_host": host,
                        "_other_host": winner is not None and host != winner["host"],
                        "_wtier": winner["tier"] if winner else None})
    if not incs:
        return [], pl.DataFrame(schema=EVIDENCE_SCHEMA)
    w = pl.DataFrame(winners, schema={"run": pl.String, "attempt": pl.Int32, "_has_w": pl.Boolean, "_wid": pl.UInt32,
                                      "_wmode": pl.String, "_whost": pl.String, "_host": pl.String,
                                      "_other_host": pl.Boolean, "_wtier": pl.Int32})
    # the same support rule as `_decide`: the winner, the symptoms, the cause's other lines, the peers' errors
    is_winner = pl.col("_id").eq_missing(pl.col("_wid")) & pl.col("_wid").is_not_null()
    same_host = pl.col("host").eq_missing(pl.col("_whost")) | pl.col("_other_host")
    supports = (is_winner | pl.col("symptom") | (pl.col("_has_w") & (pl.col("failure_mode") == pl.col("_wmode"))
                                                  & same_host)
                | (pl.col("_host").is_not_null() & (pl.col("peer_host").eq_missing(pl.col("_host"))
                                                    | ((pl.col("kind") == "stopped_first")
                                                       & pl.col("host").eq_missing(pl.col("_host"))))))
    c = c.join(w, on=keys, how="inner").with_columns(_win=is_winner, _sup=supports.fill_null(False))
    rest = ~pl.col("progressed") & ~pl.col("_sup")
    c = c.with_columns(_rest=rest)
    comp = (c.filter("_rest", pl.col("_has_w"), pl.col("tier").is_not_null(), pl.col("_wtier").is_not_null(),
                     pl.col("tier") >= pl.col("_wtier"))
            .group_by(keys).len())
    competitors = {(r["run"], r["attempt"]): r["len"] for r in comp.iter_rows(named=True)}
    ev = (c.filter(~pl.col("progressed"), pl.col("_sup"))
          .sort(*keys, ~pl.col("_win"), pl.col("tier").neg(), "ts", "file", "line", "_id")
          .with_columns(incident_id=pl.format("{}:{}:end", "run", "attempt"),
                        rank_in_incident=pl.int_range(1, pl.len() + 1).over(keys).cast(pl.Int64)))
    rejected = _rejected_all(c.filter(pl.col("progressed") | pl.col("_rest")), incs, s.max_rejected)
    rows = []
    for k, inc in incs.items():
        n = competitors.get(k, 0)
        confidence = max(0.05, inc.pop("_conf") - 0.3 * min(n, 1) - (0.1 if n > 1 else 0.0))
        inc.pop("_winner")
        rows.append({**inc, "confidence": round(confidence, 2), "rejected": rejected.get(k, [])})
    return rows, ev.select(*keys, *EVIDENCE_SCHEMA)


def _rank_of(winner: dict | None, host: str | None) -> int | None:
    """The rank the cause names, where it is the blamed host's own (a peer's error about a host names the peer)."""
    if winner is None or host is None or winner.get("host") != host or winner.get("rank") is None:
        return None
    return int(winner["rank"])


def _rejected_all(rej: pl.DataFrame, incs: dict[tuple, dict], limit: int) -> dict[tuple, list[dict]]:
    """`_rejected` for every attempt: the rejected candidates `rej` (progressed, else outranked by the
    winner in `incs`), one entry per (mode, host, kind), the first `limit` per attempt in time order."""
    keys = ["run", "attempt"]
    rej = (rej.sort(*keys, "ts", "file", "line", "_id")
           .group_by(*keys, "failure_mode", "host", "kind", maintain_order=True)
           .agg(pl.all().first(), n=pl.len())
           .filter(pl.int_range(pl.len()).over(keys) < limit))
    rejected: dict[tuple, list[dict]] = {}
    for x in rej.iter_rows(named=True):  # NOTE: at most `limit` rows per attempt
        k = (x["run"], x["attempt"])
        winner = incs[k]["_winner"]
        if x["progressed"]:
            who = f"{x['host']}'s ranks and the job" if x["host"] else "all ranks"
            reason = progress.stepped_past(who, x)
        elif winner is None:
            reason = "no cause"
        else:
            reason = f"outranked by {winner['kind']} on {winner['host'] or 'the job'} at {winner['ts']:%H:%M:%S}"
        rejected.setdefault(k, []).append({
            "candidate": {"failure_mode": x["failure_mode"], "host": x["host"],
                          "ts": x["ts"].isoformat() if x["ts"] else None, "kind": x["kind"], "file": x["file"],
                          "line": x["line"]},
            "reason": reason + (f" (and {x['n'] - 1} more like it)" if x["n"] > 1 else "")})
    return rejected


def _rejected(c: pl.DataFrame, reasons: dict[int, str], limit: int) -> list[dict]:
    """One entry per (mode, host, kind) rejected, its first line and why, the first `limit` in time order."""
    if not reasons:
        return []
    r = (c.filter(pl.col("_id").is_in(list(reasons))).join(
        pl.DataFrame({"_id": list(reasons), "reason": list(reasons.values())},
                     schema={"_id": pl.UInt32, "reason": pl.String}), on="_id")
         .sort("ts", "file", "line").group_by("failure_mode", "host", "kind", maintain_order=True)
         .agg(pl.all().first(), n=pl.len()).head(limit))
    return [{"candidate": {"failure_mode": x["failure_mode"], "host": x["host"],
                           "ts": x["ts"].isoformat() if x["ts"] else None, "kind": x["kind"], "file": x["file"],
                           "line": x["line"]},
             "reason": x["reason"] + (f" (and {x['n'] - 1} more like it)" if x["n"] > 1 else "")}
            for x in r.iter_rows(named=True)]


def _stamped_by_attempt(live: pl.DataFrame) -> dict[tuple, pl.DataFrame]:
    """The candidates with a stamp of their own, per (run, attempt): what `_root_time` looks through (split once;
    filtering all of them per attempt is quadratic)."""
    if "own_stamp" not in live.columns or not live.height:
        return {}
    return live.filter(pl.col("own_stamp").fill_null(True)).partition_by("run", "attempt", as_dict=True)


def _root_time(winner: dict, cands: pl.DataFrame) -> dt.datetime:
    """When the cause happened: the winner's time, or, for a winner without its own stamp (a traceback dated by
    its process's death), the first stamped line of the same failure mode inside its interval (the NFS server's
    first "not responding" before the `OSError` it caused). `cands`: the attempt's candidates."""
    lo, hi = winner.get("ts_lo"), winner.get("ts_hi") or winner["ts"]  # a line dated back lies up to `ts_hi`
    if lo is None or lo >= hi or "own_stamp" not in cands.columns:
        return winner["ts"]
    same = cands.filter(pl.col("failure_mode") == winner["failure_mode"], pl.col("own_stamp").fill_null(True),
                        pl.col("ts") >= lo, pl.col("ts") <= hi)
    return same["ts"].min() if same.height else winner["ts"]


def _shared_service(con: duckdb.DuckDBPyConnection, winner: dict, host: str | None, exit_ts: dt.datetime | None,
                    s: incidents.Settings) -> tuple[str | None, bool]:
    """A filesystem server or the fabric that several hosts report from around the cause to the attempt's exit:
    blamed as that service. NOTE: from before the earliest the cause can have happened to the exit, because a
    traceback line carries no stamp of its own: it lies between the stamped lines around it (`ts_lo`, its `ts`)."""
    until = max(winner["ts"] + dt.timedelta(seconds=s.shared_window_s), exit_ts or winner["ts"])
    # a cause without its own stamp happened somewhere in its interval: the window opens before its earliest
    since = min(winner["ts"], winner.get("ts_lo") or winner["ts"])
    near = store.frame(con, """
        SELECT host, kind, coalesce(json_extract_string(detail, '$.server'),
                                    json_extract_string(detail, '$.target')) AS svc
        FROM events WHERE failure_mode = $mode AND source = 'kernel' AND host IS NOT NULL
          AND ts BETWEEN $ts - to_seconds($w) AND $until""",
                       {"mode": winner["failure_mode"], "ts": since, "w": s.shared_window_s, "until": until})
    if not near.height:
        return host, False
    if winner["failure_mode"] == "filesystem_io":
        mine = _service(winner) if winner.get("detail") else None
        svc = near.filter(pl.col("svc").is_not_null())
        if mine is not None:
            svc = svc.filter(pl.col("svc") == mine)
        top = svc.group_by("svc").agg(n=pl.col("host").n_unique()).sort(["n", "svc"], descending=[True, False])
        if top.height and top["n"][0] >= s.shared_fs_min_hosts:
            return top["svc"][0], True
        return host, False
    links = near.filter(pl.col("kind").is_in(["link_down", "port_module_error", "nic_health"]))
    if links["host"].n_unique() >= s.shared_min_hosts:
        return "fabric", True
    return host, False
