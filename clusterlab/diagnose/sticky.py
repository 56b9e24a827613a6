"""Sticky faults: a GPU memory fault outlives the job it killed, and so does a GPU gone from the bus, a wedged GPU, a
fatal NVLink or PCIe error, a host's filesystem client that failed to mount.

An uncorrectable ECC error leaves the faulty HBM rows in use until the GPU is reset (a row remap stays
"pending"), so the next job on that host often dies at start-up of what looks like its own fault: a CUDA
out-of-memory on an empty GPU, an illegal address, an exception in the first collective. Its own evidence
then says `cuda_oom` or `user_code_error`, and the user is blamed for the provider's GPU. A GPU that fell off the bus
while the node was idle leaves CUDA one device short (`invalid device ordinal` on the last local rank), a client
the filesystem evicted and would not remount leaves the job no working directory: the same start-up deaths.

Two rules, each re-attributing an attempt-end incident to the fault's mode on its host:
- start-up: an attempt that ended before it finished a step, whose cause is such an application-side mode
  (`MASKED_MODES`) on a host that logged a GPU memory fault within `STICKY_WINDOW` before the attempt began, or
  another fault that stays until a reset or a remount (`STARTUP_MODES`, not one the hardware coped with) within
  `STARTUP_WINDOW`;
- pending remap: an attempt, however long it ran, that died of a CUDA error (`PENDING_MASKED`) on a GPU that said
  before the attempt began that a row waits for a reset to be remapped (the driver's Xid 63, a failed remap's Xid
  64, `nvidia-smi -q`'s `Remapped Rows: Pending: Yes`), within `PENDING_WINDOW`. An incident already
  `gpu_memory_ecc` there (the Xid 48 at its death) keeps its mode and gets the pending remap as its first evidence.
Either fault is believed only until the GPU is seen reset or its node rebooted or returned to service
(`RESET_KINDS`; an `nvidia-smi -q` report of that GPU with nothing pending), before the attempt began. Where
NCCL's init names the GPU of the incident's rank and a pending remap names its bus, they must be the same GPU (a
start-up death is any rank's: the first rank to fail need not be the one on the faulty GPU).
The incident keeps its own evidence; the earlier fault becomes its first evidence line, and the mode it had is
kept among the rejected candidates with the reason.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from clusterlab import store
from clusterlab.diagnose import reattribute

STICKY_WINDOW = dt.timedelta(hours=24)  # a memory fault this long before the attempt still counts (no reset seen)
# faults that last until the GPU is reset, the node rebooted or the filesystem remounted: a start-up death soon after
# one on a host of the attempt is that fault's (an operator who lets a job start on such a node has not fixed it yet)
STARTUP_MODES = ("gpu_fell_off_bus", "gpu_hw_other", "nvlink_error", "pcie_error", "host_hw", "filesystem_io")
STARTUP_WINDOW = dt.timedelta(hours=2)
_FAULT_WORDS = {"gpu_memory_ecc": "GPU memory fault", "gpu_fell_off_bus": "GPU lost from the bus",
                "gpu_hw_other": "GPU fault", "nvlink_error": "NVLink fault", "pcie_error": "PCIe fault",
                "host_hw": "host hardware fault", "filesystem_io": "filesystem client's failure"}
# a row remap waits for a reset however long that takes; a week bounds it where the evidence of a reset was lost
PENDING_WINDOW = dt.timedelta(days=7)
# what a GPU whose memory is still faulty makes a job that starts on it report
MASKED_MODES = ("cuda_oom", "cuda_error", "user_code_error", "unknown", "nccl_timeout")
# what a job reports at any step when it reads the row that waits for its remap
PENDING_MASKED = ("cuda_error",)
# the lines that say a GPU's faulty rows wait for a reset (kernel NVRM lines, nvidia-smi findings) and their Xids
PENDING_KINDS = ("row_remap_pending", "row_remap_failure", "page_retirement_pending")
PENDING_XIDS = (63, 64)
# a node rebooted or returned to service by its operator: its GPUs were reset
RESET_KINDS = ("slurm_node_resume", "slurm_node_reboot")
STICKY_CONFIDENCE = 0.6  # the link is inferred from time and place, not printed by either job

# `0000:5d:00` (an Xid), `00000000:5D:00.0` (nvidia-smi, NCCL): the bus and device, which name a GPU on its host
_BUS = r"""nullif(regexp_extract(lower({}), '([0-9a-f]{{2}}:[0-9a-f]{{2}})(\.[0-7])?\s*$', 1), '')"""

_PENDING = (f"kind IN ({', '.join(repr(k) for k in PENDING_KINDS)}) "
            f"OR xid IN ({', '.join(str(x) for x in PENDING_XIDS)})")
# The fault line explaining each incident of `masked` by each rule (`rule`: pending or startup): the latest fault on
# its host before its attempt began, within the rule's window, with no reset seen between the two; for a pending
# remap on the incident rank's GPU where both name theirs; per host (a hostless incident is asked of each host of its
# attempt). One query for both rules: its cost is mostly fixed.
_FOUND = f"""
    WITH m0 AS (
        SELECT m.incident_id, m.run, m.attempt, m.host, m.rank, a.start_ts,
               list_contains($pending_masked, m.failure_mode) AS pending_masked,
               -- died before it finished a step: no step, or only the one it began with
               list_contains($masked_modes, m.failure_mode) AND coalesce(a.last_step - a.first_step, 0) < 1
                   AS startup_masked
        FROM masked m JOIN attempts a USING (run, attempt) WHERE a.start_ts IS NOT NULL
    ),
    -- the GPU of the incident's rank as NCCL's init names it (its lines are many, the incidents few: theirs first)
    gpu AS (
        SELECT run, attempt, host, rank, any_value(bus_id) AS bus_id FROM nccl_ranks SEMI JOIN m0 USING (run, attempt,
                                                                                                         host, rank)
        WHERE bus_id IS NOT NULL GROUP BY ALL
    ),
    m AS (SELECT m0.*, {_BUS.format("gpu.bus_id")} AS bus FROM m0 LEFT JOIN gpu USING (run, attempt, host, rank)),
    -- one pass over the events: the faults and the resets on the incidents' hosts
    e AS MATERIALIZED (
        SELECT ts, host, {_BUS.format("pci_bus")} AS bus, source, kind, failure_mode, xid, rank, file_id, line, text,
               coalesce({_PENDING}, false) AS pending, failure_mode IS NOT DISTINCT FROM 'gpu_memory_ecc' AS ecc,
               -- (a host's own fault: its kernel's, its GPU tools'; not a scheduler's verdict, nor one coped with)
               coalesce(list_contains($startup_modes, failure_mode) AND severity <> 'warning'
                        AND source NOT IN ('sacct', 'slurmctld', 'slurm', 'slurm_jobcomp'), false) AS lasting,
               list_contains($resets, kind) AS node_reset,
               (source IN ('nvidia_smi', 'nvidia_smi_query')
                AND json_extract_string(detail, '$.remap_pending') = 'false'
                AND coalesce(json_extract_string(detail, '$.remap_failure'), 'false') = 'false'
                AND coalesce(json_extract_string(detail, '$.page_retirement_pending'), 'false') = 'false') AS gpu_reset
        FROM events WHERE ts IS NOT NULL AND host IN (SELECT host FROM m0)
          AND ({_PENDING} OR failure_mode = 'gpu_memory_ecc' OR list_contains($startup_modes, failure_mode)
               OR list_contains($resets, kind)
               OR source IN ('nvidia_smi', 'nvidia_smi_query'))
    ),
    -- a node's reset clears every GPU of it; a GPU's report with nothing pending, that GPU
    resets AS (SELECT host, CASE WHEN node_reset THEN NULL ELSE bus END AS bus, ts FROM e
               WHERE node_reset OR gpu_reset),
    hit AS (
        SELECT CASE WHEN m.pending_masked AND f.pending AND f.ts >= m.start_ts - to_microseconds($pending_window)
                         AND (f.bus IS NULL OR m.bus IS NULL OR f.bus = m.bus) THEN 'pending'
                    WHEN m.startup_masked AND f.ecc AND f.ts >= m.start_ts - to_microseconds($sticky_window)
                         THEN 'startup'
                    WHEN m.startup_masked AND f.lasting AND f.ts >= m.start_ts - to_microseconds($startup_window)
                         THEN 'startup' END AS rule,
               m.incident_id, f.ts, f.host, f.source, f.kind, f.failure_mode, f.xid,
               -- a line that names no rank but the GPU of the incident's: that rank's
               CASE WHEN f.rank IS NULL AND f.bus = m.bus THEN m.rank ELSE f.rank END AS rank, f.file_id, f.line, f.text
        FROM m JOIN e AS f ON f.host = m.host AND f.ts < m.start_ts AND (f.pending OR f.ecc OR f.lasting)
        WHERE NOT EXISTS (SELECT 1 FROM resets r WHERE r.host = f.host AND r.ts > f.ts AND r.ts <= m.start_ts
                                                    AND (r.bus IS NULL OR r.bus = f.bus))
    )
    SELECT h.rule, h.incident_id, h.ts, h.host, h.source, h.kind, h.failure_mode, h.xid, h.rank, fl.path AS file,
           h.line, h.text
    FROM hit h JOIN ingested_files fl USING (file_id) WHERE h.rule IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY h.rule, h.incident_id, h.host ORDER BY h.ts DESC, fl.path, h.line) = 1"""


def with_sticky_faults(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame, ev: pl.DataFrame,
                       ev_schema: dict[str, pl.DataType]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`inc` and `ev` (root cause's attempt-end incidents and evidence) with the sticky faults re-attributed."""
    modes = pl.col("failure_mode").is_in([*MASKED_MODES, *PENDING_MASKED, "gpu_memory_ecc"])
    masked = inc.filter(modes, pl.col("host").is_not_null())
    # NOTE: a hostless one that a GPU raised (a launcher's relayed `CUDA error: uncorrectable ECC error` naming a global
    # rank) is asked of every host of its attempt: where one alone kept a memory fault from before, it was that host's
    # GPU. Not an exception or a hang of no one's device: that some host had a fault says nothing of those
    hostless = inc.filter(pl.col("failure_mode").is_in([*PENDING_MASKED, "gpu_memory_ecc", "cuda_oom"]),
                          pl.col("host").is_null())
    # (no memory fault anywhere, the usual case: one scan of two columns instead of the query's fixed ~15 ms)
    # ... and a start-up death of no one's device is asked of every host of its attempt too, for the lasting faults
    startup = inc.filter(pl.col("failure_mode").is_in(MASKED_MODES), pl.col("host").is_null(),
                         pl.col("incident_id").is_in(_startup_deaths_of(con, inc)))
    hostless = pl.concat([hostless, startup]).unique("incident_id", keep="first", maintain_order=True)
    modes = ", ".join(f"'{m}'" for m in ("gpu_memory_ecc", *STARTUP_MODES))
    if not (masked.height or hostless.height) or not con.execute(
            f"SELECT count(*) FROM events WHERE failure_mode IN ({modes}) OR {_PENDING}").fetchall()[0][0]:
        return inc, ev
    cols = ["incident_id", "run", "attempt", "host", "rank", "failure_mode"]
    if hostless.height:
        hosts = store.frame(con, "SELECT run, attempt, unnest(hosts) AS host FROM attempts WHERE hosts IS NOT NULL")
        masked = pl.concat([masked.select(cols), hostless.drop("host").join(
            hosts, on=["run", "attempt"]).select(cols)], how="vertical_relaxed")
    found = store.frame(con, _FOUND, {
        "pending_masked": [*PENDING_MASKED, "gpu_memory_ecc"], "masked_modes": list(MASKED_MODES),
        "resets": list(RESET_KINDS), "pending_window": int(PENDING_WINDOW.total_seconds() * 1e6),
        "sticky_window": int(STICKY_WINDOW.total_seconds() * 1e6), "startup_modes": list(STARTUP_MODES),
        "startup_window": int(STARTUP_WINDOW.total_seconds() * 1e6),
    }, masked=masked.select(cols))
    if hostless.height and found.height:
        found, inc = _placed(found, inc, hostless["incident_id"])
    if not found.height:
        return inc, ev
    pending = found.filter(pl.col("rule") == "pending").drop("rule")
    inc, ev = _pending_remaps(inc, ev, pending, ev_schema)
    # (an incident the pending remap explains is explained)
    return _startup_deaths(inc, ev, found.filter(pl.col("rule") == "startup").drop("rule").join(
        pending, on="incident_id", how="anti"), ev_schema)


def _placed(found: pl.DataFrame, inc: pl.DataFrame, hostless: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`found` and `inc` with each hostless incident placed on the one host whose fault `found` names (none where
    faults on several hosts could be it: its rows are dropped)."""
    mine = pl.col("incident_id").is_in(hostless.to_list())
    one = (found.filter(mine).group_by("incident_id").agg(_host=pl.col("host").unique())
           .filter(pl.col("_host").list.len() == 1).with_columns(pl.col("_host").list.first()))
    inc = inc.join(one, on="incident_id", how="left", maintain_order="left").with_columns(
        host=pl.coalesce("host", "_host")).drop("_host")
    return found.filter(~mine | pl.col("incident_id").is_in(one["incident_id"].to_list())), inc


def _pending_remaps(inc: pl.DataFrame, ev: pl.DataFrame, found: pl.DataFrame, ev_schema: dict[str, pl.DataType]
                    ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pending-remap rule (the module's second item), `found` its fault lines."""
    if not found.height:
        return inc, ev
    mode = dict(inc.select("incident_id", "failure_mode").iter_rows())
    # already the GPU's memory (the uncorrectable error at its death): the pending remap is why, and leads
    known = found.join(inc.filter(pl.col("failure_mode") == "gpu_memory_ecc"), on="incident_id", how="semi")
    if known.height:
        ev = reattribute.lead(inc, ev, known, ev_schema)
    found = found.join(known, on="incident_id", how="anti")
    reasons = {r["incident_id"]: (f"a row of a GPU on {r['host']} waited for a reset to be remapped since "
                                  f"{r['ts']:%Y-%m-%d %H:%M:%S} and no reset was seen before this attempt began: its "
                                  f"{mode[r['incident_id']]} is that row's")
               for r in found.iter_rows(named=True)}
    return reattribute.apply(inc, ev, found, "gpu_memory_ecc", STICKY_CONFIDENCE, reasons, ev_schema)


def _startup_deaths(inc: pl.DataFrame, ev: pl.DataFrame, found: pl.DataFrame, ev_schema: dict[str, pl.DataType]
                    ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The start-up rule (the module's first item), `found` its fault lines."""
    if not found.height:
        return inc, ev
    masked_by = dict(inc.select("incident_id", "failure_mode").iter_rows())
    for (mode,), part in found.group_by("failure_mode", maintain_order=True):
        what = _FAULT_WORDS.get(str(mode), str(mode))
        reasons = {r["incident_id"]: (f"the {what} on {r['host']} at {r['ts']:%Y-%m-%d %H:%M:%S}, before this attempt "
                                      f"began, explains a start-up {masked_by[r['incident_id']]}")
                   for r in part.iter_rows(named=True)}
        inc, ev = reattribute.apply(inc, ev, part, str(mode), STICKY_CONFIDENCE, reasons, ev_schema)
    return inc, ev


def _startup_deaths_of(con: duckdb.DuckDBPyConnection, inc: pl.DataFrame) -> list[str]:
    """The incidents of `inc` whose attempt ended before it finished a step."""
    short = store.frame(con, """SELECT run, attempt FROM attempts
                                WHERE start_ts IS NOT NULL AND coalesce(last_step - first_step, 0) < 1""")
    return inc.join(short, on=["run", "attempt"], how="semi")["incident_id"].to_list()
