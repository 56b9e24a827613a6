"""Error counters at an attempt's end: the GPU's own witness beside the logs, and the only one where they are silent.

DCGM counts what a GPU went through: uncorrectable ECC errors, NVLink CRC errors, PCIe replays, and the last
Xid it saw (`telemetry_incidents.error_episodes` turns rising counters and new Xids into episodes). Where an
attempt ended in a failure (`root_cause` decided it from the logs and the step timeline):
- the logs name a hardware cause on a host: live episodes on that host (and GPU, where both name one) back it
  up. They are listed as its evidence and its confidence rises. Episodes on other hosts or GPUs do not
  override the logs: they are listed among the rejected candidates, with why.
- the logs name no cause (only the scheduler's NODE_FAIL, the watchdog timeouts every rank prints, a hung job
  killed, a log that just stops): the first live episode on a job host becomes the cause, with its mode, host
  and GPU, at a confidence below what a log line gets; what the logs did say stays as its evidence.
An episode is live when it falls in the window `incidents.candidates` reads evidence from and the job did not
keep stepping after its last rising sample (the rule `root_cause` judges a log line by). A scheduler's kill of
a job that was stepping until the kill (time limit, preemption, a person's cancel) is never overridden.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store, taxonomy
from clusterlab.diagnose import incidents, progress, root_cause, telemetry_incidents

# The faults counters can witness on a host: the GPU and host hardware modes of the top tier of incidents.TIERS.
HARDWARE = ("gpu_fell_off_bus", "gpu_memory_ecc", "gpu_hw_other", "nvlink_error", "pcie_error", "host_hw")
HARDWARE_TIER = 100  # incidents.TIERS' tier of HARDWARE
# NOTE: a counter alone is a weaker witness than a log line (root_cause gives a fault before the loss of progress
# 0.9): it says a GPU erred, not that the error stopped the job. A new Xid is the driver's own verdict of a fault
# (0.6); a rising counter only makes one likely (0.5).
CAUSE_CONFIDENCE = {"xid": 0.6, "rate": 0.5}
# NOTE: counters backing up a log line are a second, independent witness (the GPU's own registers read by DCGM,
# not the kernel's or the application's log): both wrong at once is far less likely than either, so half of the
# remaining doubt goes (0.9 -> 0.95, a late fault's 0.5 -> 0.75). Not all of it: a GPU can err without
# that error being what ended the job.
BACKED_DOUBT_KEPT = 0.5
RIVAL_PENALTY = 0.3  # a counter cause with live hardware episodes on other GPUs too: as root_cause's competitor rule
_SILENT_MODES = ("unknown", "node_failure")  # the scheduler lost the node, or nothing at all was said


def _job_steps(con: duckdb.DuckDBPyConnection, since: pl.DataFrame) -> pl.DataFrame:
    """The job's step records (training log and per-rank timings, first end of each step) of the attempts in
    `since` (run, attempt, since) after their `since`."""
    return store.frame(con, """
        SELECT run, attempt, step, min(ts) AS ts FROM (
            SELECT run, attempt, step, ts FROM steps UNION ALL SELECT run, attempt, step, ts FROM rank_steps)
        JOIN since USING (run, attempt)
        WHERE ts > since.since AND step IS NOT NULL GROUP BY ALL ORDER BY run, attempt, ts""", since=since)


def _attempts(con: duckdb.DuckDBPyConnection, ends: pl.DataFrame) -> pl.DataFrame:
    """The ended attempts' start, hosts, next attempt's start and last step: what an episode is judged against."""
    keys = ends.select("run", pl.col("attempt").cast(pl.Int32)).unique()
    att = store.frame(con, """
        SELECT a.* FROM (SELECT run, attempt, start_ts, hosts,
                                lead(start_ts) OVER (PARTITION BY run ORDER BY attempt) AS next_start FROM attempts) a
        JOIN keys USING (run, attempt)""", keys=keys)
    return att.join(ends.select("incident_id", "run", pl.col("attempt").cast(pl.Int32), "exit_ts"),
                    on=["run", "attempt"])


def counter_candidates(con: duckdb.DuckDBPyConnection, ends: pl.DataFrame, s: incidents.Settings) -> pl.DataFrame:
    """Error episodes on each ended attempt's hosts inside its evidence window, with the steps after each:
    `n_after`, `progress_s`, `progressed` (the job kept stepping after it: not what ended the attempt)."""
    att = _attempts(con, ends)
    hosts = att.select(pl.col("hosts").explode()).drop_nulls()["hosts"].unique().to_list()
    ep = telemetry_incidents.error_episodes(con, hosts) if hosts else pl.DataFrame()
    if not ep.height:
        return pl.DataFrame()
    # informational Xids (a follow-on of another error) are no cause, as in incidents.candidates
    not_causes = [x.code for x in taxonomy.XIDS.values() if not x.root_cause]
    ep = ep.filter(pl.col("xid").is_null() | ~pl.col("xid").is_in(not_causes))
    window, grace = dt.timedelta(seconds=s.window_s), dt.timedelta(seconds=s.grace_s)
    pairs = (att.explode("hosts").join(ep, left_on="hosts", right_on="host").rename({"hosts": "host"})
             .filter(pl.col("end_ts") >= pl.col("start_ts"), pl.col("ts") <= pl.col("exit_ts") + grace,
                     pl.col("next_start").is_null() | (pl.col("ts") < pl.col("next_start"))))
    if not pairs.height:
        return pl.DataFrame()
    # NOTE: only steps after an attempt's earliest episode can follow one: the per-rank table is read from there
    steps = _job_steps(con, pairs.group_by("run", "attempt").agg(since=pl.col("end_ts").min()))
    # the window incidents.candidates reads the logs in: from `window_s` before the last step. Where no step came
    # after the earliest episode, every episode came after the last step, inside the window.
    last = steps.group_by("run", "attempt").agg(last_ts=pl.col("ts").max())
    pairs = pairs.join(last, on=["run", "attempt"], how="left").filter(
        pl.col("last_ts").is_null() | (pl.col("end_ts") >= pl.min_horizontal("last_ts", "exit_ts") - window))
    if not pairs.height:
        return pl.DataFrame()
    # the steps after an episode's last rising sample (past the clock skew): as root_cause counts after a line
    skew = dt.timedelta(seconds=s.skew_s)
    after = (pairs.select("incident_id", "run", "attempt", "host", "gpu", "kind", "ts", "end_ts")
             .join(steps.rename({"ts": "step_ts"}), on=["run", "attempt"], how="left")
             .filter(pl.col("step_ts") > pl.col("end_ts") + skew)
             .group_by("incident_id", "host", "gpu", "kind", "ts")
             .agg(n_after=pl.len(), last_after=pl.col("step_ts").max()))
    pairs = pairs.join(after, on=["incident_id", "host", "gpu", "kind", "ts"], how="left").with_columns(
        n_after=pl.col("n_after").fill_null(0),
        progress_s=(pl.col("last_after") - pl.col("end_ts")).dt.total_seconds().fill_null(0.0))
    progressed = (pl.col("n_after") >= s.progress_min_steps) & (pl.col("progress_s") >= s.progress_min_s)
    tier = pl.when(pl.col("failure_mode").is_in(HARDWARE)).then(HARDWARE_TIER).otherwise(None).cast(pl.Int32)
    return pairs.with_columns(progressed=progressed, tier=tier).sort("incident_id", "ts", "host", "gpu", "kind")


def _log_bus(con: duckdb.DuckDBPyConnection, ev: pl.DataFrame) -> dict[str, str]:
    """incident_id -> the PCI bus id its first evidence line names (a kernel Xid line names the GPU's)."""
    first = ev.filter(pl.col("rank_in_incident") == 1, pl.col("line").is_not_null()).select("incident_id", "file",
                                                                                             "line")
    if not first.height:
        return {}
    got = store.frame(con, """
        SELECT DISTINCT ON (x.incident_id) x.incident_id, e.pci_bus FROM first x
        JOIN ingested_files f ON f.path = x.file JOIN events e ON e.file_id = f.file_id AND e.line = x.line
        WHERE e.pci_bus IS NOT NULL ORDER BY x.incident_id""", first=first)
    return dict(got.iter_rows())


def _evidence_rows(iid: str, rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame([{"incident_id": iid, "rank_in_incident": 0, "ts": r["ts"], "host": r["host"],
                          "source": r["source"], "kind": r["kind"], "failure_mode": r["failure_mode"], "xid": r["xid"],
                          "rank": None, "file": r["file"], "line": r["line"], "text": r["text"], "tier": r["tier"]}
                         for r in rows], schema=root_cause.EVIDENCE_SCHEMA)


def _rejections(rows: list[tuple[dict, str]], limit: int) -> list[dict]:
    """One rejected entry per (mode, host, kind), its first episode and why, the first `limit` in time order."""
    groups: dict[tuple, list[tuple[dict, str]]] = {}
    for r, reason in sorted(rows, key=lambda x: (x[0]["ts"], x[0]["host"], x[0]["line"] or 0)):
        groups.setdefault((r["failure_mode"], r["host"], r["kind"]), []).append((r, reason))
    out = []
    for same in list(groups.values())[:limit]:
        r, reason = same[0]
        more = f" (and {len(same) - 1} more like it)" if len(same) > 1 else ""
        out.append({"candidate": {"failure_mode": r["failure_mode"], "host": r["host"], "ts": r["ts"].isoformat(),
                                  "kind": r["kind"], "file": r["file"], "line": r["line"]}, "reason": reason + more})
    return out


def _where(r: dict) -> str:
    return f"GPU {r['gpu']} of {r['host']}" if r["gpu"] is not None else str(r["host"])


def _kept_stepping(r: dict) -> str:
    return (f"the job kept stepping for {progress.duration_text(r['progress_s'])} after it ({r['n_after']} step "
            f"records, to {r['last_after']:%H:%M:%S})")


def _is_silent(inc: dict) -> bool:
    """The logs name no cause: nothing, only the scheduler's node failure, or only what every rank of a hung job
    prints (root_cause's winner then is a verdict or a symptom)."""
    return inc["failure_mode"] in _SILENT_MODES or (inc["tier"] is not None and inc["tier"] <= incidents.SYMPTOM_TIER)


def _as_cause(inc: dict, live: list[dict]) -> tuple[dict, list[dict], list[tuple[dict, str]]]:
    """The incident with the first live hardware episode as its cause; its supporting episodes; the rejected."""
    causes = [r for r in live if r["tier"] is not None]
    lost = inc["host"] if inc["failure_mode"] == "node_failure" else None
    if lost is not None:  # the scheduler named the node it lost: only that node's counters can say why
        causes = [r for r in causes if r["host"] == lost]
    if not causes:
        return inc, [], [(r, f"the scheduler lost {lost}, not this host" if lost and r["host"] != lost else
                          f"{r['failure_mode']} is the application's fault, which its own log would name")
                         for r in live]
    w = min(causes, key=lambda r: (r["kind"] != "xid", r["ts"], r["host"], r["line"] or 0))
    conf = CAUSE_CONFIDENCE["xid" if w["kind"] == "xid" else "rate"]
    new = {**inc, "failure_mode": w["failure_mode"], "host": w["host"], "gpu": w["gpu"], "bus_id": w["bus_id"],
           "root_ts": w["ts"], "tier": w["tier"], "confidence": conf}
    same = [r for r in live if r is not w and r["host"] == w["host"] and r["gpu"] == w["gpu"]]
    rejected = [(r, f"outranked by {w['kind']} on {_where(w)} at {w['ts']:%H:%M:%S}")
                for r in live if r is not w and r not in same]
    if any(r["tier"] is not None for r, _ in rejected):  # another GPU erred before the end too: less sure which
        new["confidence"] = round(max(0.05, conf - RIVAL_PENALTY), 2)
    return new, [w, *same], rejected


def _backing(inc: dict, bus: str | None, live: list[dict]) -> tuple[dict, list[dict], list[tuple[dict, str]]]:
    """The incident, the live episodes that back its log cause up (its host, its GPU), and the others rejected."""
    back, rejected = [], []
    for r in live:
        if inc["failure_mode"] not in HARDWARE:
            rejected.append((r, f"the logs name {inc['failure_mode']} on {inc['host'] or 'the job'}, which a "
                                "hardware counter does not explain; counters do not override the logs"))
        elif r["host"] != inc["host"]:
            rejected.append((r, f"the logs put {inc['failure_mode']} on {inc['host']}; counters on another host "
                                "do not override them"))
        elif bus is not None and r["bus_id"] is not None and r["bus_id"] != bus:
            rejected.append((r, f"on GPU {r['gpu']} ({r['bus_id']}), not the GPU the logs name ({bus})"))
        else:
            back.append(r)
    if not back:
        return inc, [], rejected
    gpus = {(r["gpu"], r["bus_id"]) for r in back}
    gpu, bus_id = next(iter(gpus)) if len(gpus) == 1 else (None, bus)
    conf = round(1.0 - (1.0 - inc["confidence"]) * BACKED_DOUBT_KEPT, 2)
    return {**inc, "confidence": conf, "gpu": gpu, "bus_id": bus_id}, back, rejected


def with_counter_evidence(con: duckdb.DuckDBPyConnection, ends: pl.DataFrame, ev: pl.DataFrame,
                          s: incidents.Settings) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`root_cause.attempt_end_incidents`' incidents and evidence with the error counters of their hosts weighed:
    backing up a hardware cause the logs name, or the cause where the logs name none (module docstring).

    The incidents gain `gpu` and `bus_id` (where counters name the GPU); nothing changes without telemetry."""
    if not ends.height or not telemetry_incidents._has_telemetry(con):
        return ends, ev
    cand = counter_candidates(con, ends, s)
    if not cand.height:
        return ends, ev
    by_inc = cand.partition_by("incident_id", as_dict=True)
    buses = _log_bus(con, ev.join(cand.select("incident_id").unique(), on="incident_id", how="semi"))
    ends = ends.with_columns(gpu=pl.lit(None, pl.Int32), bus_id=pl.lit(None, pl.String))
    hit = ends.join(cand.select("incident_id").unique(), on="incident_id", how="semi")
    out, extra = [], []
    for inc in hit.iter_rows(named=True):  # NOTE: the incidents with counters near their end, a few episodes each
        rows = by_inc[(inc["incident_id"],)].to_dicts()
        live = [r for r in rows if not r["progressed"]]
        rejected = [(r, _kept_stepping(r)) for r in rows if r["progressed"]]
        if inc["failure_mode"] in root_cause.KILLS:
            rejected += [(r, f"the job was stepping until the scheduler's {inc['failure_mode']}") for r in live]
            new, support, lead = inc, [], False
        elif _is_silent(inc):
            new, support, more = _as_cause(inc, live)
            rejected, lead = rejected + more, True
        else:
            new, support, more = _backing(inc, buses.get(inc["incident_id"]), live)
            rejected, lead = rejected + more, False
        out.append({**new, "rejected": [*(inc["rejected"] or []), *_rejections(rejected, s.max_rejected)]})
        if support:
            extra.append((inc["incident_id"], lead, _evidence_rows(inc["incident_id"], support)))
    judged = pl.DataFrame(out, schema=ends.schema)
    keys = ["run", "attempt"]  # root_cause's order
    merged = pl.concat([ends.join(hit.select("incident_id"), on="incident_id", how="anti"), judged]).sort(keys)
    return merged, _merged(ev, extra)


def _merged(ev: pl.DataFrame, extra: list[tuple[str, bool, pl.DataFrame]]) -> pl.DataFrame:
    """`ev` with the counters' rows: first where they are the cause, after the logs' where they back it up."""
    if not extra:
        return ev
    ids = [iid for iid, _, _ in extra]
    mine = ev.filter(pl.col("incident_id").is_in(ids)).with_columns(_order=pl.lit(1), _seq=pl.lit(0))
    parts = [mine, *(rows.with_columns(_order=pl.lit(0 if lead else 2), _seq=pl.int_range(pl.len()))
                     for _, lead, rows in extra)]
    ranked = (pl.concat(parts, how="vertical_relaxed").sort("incident_id", "_order", "rank_in_incident", "_seq")
              .with_columns(rank_in_incident=(pl.int_range(pl.len()).over("incident_id") + 1).cast(pl.Int64)))
    return pl.concat([ev.filter(~pl.col("incident_id").is_in(ids)), ranked.select(ev.columns)], how="vertical_relaxed")
