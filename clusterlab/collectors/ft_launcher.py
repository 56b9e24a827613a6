"""NVIDIA Resiliency Extension (nvidia-resiliency-ext, NVRx) `ft_launcher` and its rank monitors.

`ft_launcher` is torchrun's elastic agent with a rank monitor per rank: a rank that stops sending
heartbeats (or stays too long in a section) is killed by its monitor, and the launcher restarts the
worker group in place (an in-job restart) while restarts are left. Formats, by NVRx version:

    2026-11-24 10:15:03,123 [WARNING] [gpu-017] [workload:?(3) infra:1(3)] rank_monitor_server.py:498 MSG  (0.5+)
      3: 2026-11-24 10:15:03,123 [INFO] [gpu-017] [workload:...] launcher.py:636 MSG   (0.6+ --ft-nvrx-logfile)
    [2025-03-17 10:15:03,123] [INFO] [ft_launcher48213@gpu-017] MSG                            (0.1 - 0.4)
    [2025-03-17 10:15:03,123] [WARNING] [RankMonServer48214@gpu-017:12] MSG                    (0.2 - 0.4)
    [WARNING] [RankMonitorServer:34] MSG                                                        (NeMo's docs)

The messages read:
    [Cycle 2] Did not get subsequent heartbeat. Waited 600.00 seconds.      (`[Cycle N] ` since 0.6)
    Section 'step' has been open for 301.20 seconds. Timeout is 300.00 seconds.
    Was out of section for 1201.50 seconds. Timeout is 1200.00 seconds.
    [default] Worker group FAILED. 3/3 attempts left; will restart worker group
    [default] Joining cluster restart (group_rank=1)
    [node-7] Maximum number of nodes (4) exceeded. ... This is likely a configuration error - please check max_nodes
    2/3 restart attempts left; restarting worker group...                    (min-healthy policy)
    Some rank(s) exited with non-zero exit code: {12: ProcessFailure(local_rank=4, pid=..., exitcode=-9, ...)}...
    GPU health check failed for node gpu-017: Node gpu-017 has an unhealthy GPU.

A heartbeat or section timeout is a hang: the monitor only knows the rank stopped reporting, not why
(every rank of a job stuck in a collective stops at once), so it is `nccl_timeout`, the taxonomy's
hang with no deeper cause, ranked as a symptom below any fault that explains it. The ranks it
kills are `rank_terminated` events (rank, pid, exit code, signal) without a mode of their own; a
failed node health check names the node and what failed. Each restart line is an event of kind
`restart` (no mode) with the restart's number in `detail` where the line gives it; the ledger splits
the attempt there (clusterlab.ingest.attempts). Times are the node's local time (ctx.tz).
"""

from __future__ import annotations

import signal

import polars as pl

from clusterlab.collectors._base import Context, Parsed, first_kind, json_detail, local_to_utc, search

NAME = "ft_launcher"
EXCLUSIVE = False

# The three line headers; each ends where the message begins.
_NVRX = (r"(?P<nts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<nms>\d{3}) \[(?P<nlvl>[A-Z]+)\] \[(?P<node>[^\]\s]+)\] "
         r"\[workload:(?P<wrank>[\d?]+)\((?P<wlocal>[\d?]+)\) infra:(?P<irank>[\d?]+)\((?P<ilocal>[\d?]+)\)\] "
         r"(?P<src>[\w.-]+\.py):\d+ ")
_OLD = (r"\[(?P<ots>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<oms>\d{3})\] \[(?P<olvl>[A-Z]+)\] "
        r"\[(?P<who>ft_launcher|RankMonServer)(?P<opid>\d*)@(?P<ohost>[^\]:\s]+)(?::(?P<orank>\d+|<none>))?\] ")
_DOCS = r"\[(?P<dlvl>[A-Z]+)\] \[RankMonitorServer:(?P<drank>\d+)\] "
_HEADER = (r"^(?:\s*(?P<task>\d{1,6}): )?(?:\[default\d{1,4}\]: ?)?(?:" + _NVRX + "|" + _OLD + "|" + _DOCS
           + r")(?P<msg>.*)$")
# Messages worth a row; the engine hands over only lines with a known header and one of these.
_WORDS = (r"starting workers for entrypoint|Did not get \w+ heartbeat|has been open for|out of section for"
          r"|FT timeout elapsed|attempts left"
          r"|Joining cluster restart|restart(?:ing)? worker group|non-zero exit code|[Hh]ealth check failed"
          r"|UnhealthyNodeException|no progress across restarts|EARLY TERMINATION|terminal worker-group failure"
          r"|Maximum number of nodes \(\d+\) exceeded|likely a configuration error")
_PREFIXES = (r"\[workload:[\d?]+\([\d?]+\) infra:[\d?]+\([\d?]+\)\] [\w.-]+\.py:\d+ "
             r"|\[(?:ft_launcher|RankMonServer)\d*@[^\]\s]+\] |\[RankMonitorServer:\d+\] ")
PATTERN = f"(?:{_PREFIXES}).*(?:{_WORDS})"
_SNIFF = (r"\[(?:ft_launcher|RankMonServer)\d*@[^\]\s]+\] |\[RankMonitorServer:\d+\] "
          r"|\[workload:[\d?]+\([\d?]+\) infra:[\d?]+\([\d?]+\)\] (?:launcher|rank_monitor_server"
          r"|ft_rendezvous_barrier|_ft_rendezvous|progress_tracker)\.py:\d+ ")

_CYCLE = r"^\[Cycle (\d+)\] "
_FAILURE = r"(\d+): ProcessFailure\(local_rank=(\d+), pid=(\d+), exitcode=(-?\d+)"
# (kind, regex on the message, failure mode, severity): the first that matches wins.
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("heartbeat_timeout", r"Did not get (?:initial|subsequent) heartbeat\. Waited \d+(?:\.\d+)? seconds",
     "nccl_timeout", "error"),
    ("section_timeout", r"Section '[^']*' has been open for \d+(?:\.\d+)? seconds\. Timeout is \d+(?:\.\d+)? seconds",
     "nccl_timeout", "error"),
    ("out_of_section_timeout", r"Was out of section for \d+(?:\.\d+)? seconds\. Timeout is \d+(?:\.\d+)? seconds",
     "nccl_timeout", "error"),
    # NOTE: each node's agent says so as a cycle begins: which nodes the launch ran on, where no other line of the
    # cycle names one (a node whose ranks print nothing else must still count among the attempt's hosts)
    ("workers_started", r"starting workers for entrypoint: ", None, "info"),
    ("ft_timeout", r"^FT timeout elapsed\.", None, "warning"),
    ("restart", r"Worker group \w+\. \d+/\d+ attempts left; will restart worker group", None, "warning"),
    ("restart", r"Joining cluster restart \(group_rank=\d+\)", None, "warning"),
    ("restart", r"[1-9]\d*/\d+ restart attempts left; restarting worker group", None, "warning"),
    ("restart", r"Detected \d+ new nodes from group_rank=\d+; will restart worker group", None, "info"),
    ("restarts_exhausted", r"0/\d+ restart attempts left\. Exiting", None, "error"),
    ("no_progress", r"no progress across restarts|EARLY TERMINATION: \d+ consecutive training cycles", None, "error"),
    ("ranks_failed", r"Some rank\(s\) exited with non-zero exit code: \{", None, "error"),
    ("health_check_failed", r"health check failed for node \S+: |Health check failed for node \S+: "
     r"|raised UnhealthyNodeException: ", None, "critical"),
    ("worker_group_failed", r"ended with terminal worker-group failure", None, "error"),
    # NOTE: the barrier rendezvous closes for good (every agent then raises RendezvousClosedError) when more
    # agents join than --nnodes allows: the job's launch configuration (its node count, its spares) ended it
    ("rendezvous_config_error", r"Maximum number of nodes \(\d+\) exceeded|This is likely a configuration error",
     "user_code_error", "error"),
]
_HEALTH_MODE = [  # what a failed health check names → the mode it proves, on the node it names
    (r"GPU health check|unhealthy GPU", "gpu_hw_other"),
    (r"NIC link state health check|unhealthy NIC", "network"),
    (r"[Ss]torage (?:path )?health check|unhealthy storage|invalid or unreadable paths", "filesystem_io"),
    (r"Node health check|Node \S+ is unhealthy", "node_failure"),
]
_SIGNAMES = {str(-s.value): s.name for s in signal.Signals}
_DETAIL = ["task", "role", "cycle", "phase", "section", "elapsed_s", "timeout_s", "state", "restart", "attempts_left",
           "max_restarts", "group_rank", "local_rank", "pid", "exitcode", "signal", "check", "log_pid"]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: logs agreeing on it may be parsed together (clusterlab.ingest.groups_text).

    Every row depends on its own line only."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """ft_launcher's or its rank monitors' log header in the head of the file."""
    return search(head, _SNIFF)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events for hangs the rank monitors saw, restarts, killed ranks and failed health checks; facts."""
    out = Parsed()
    f = _fields(lines, ctx)
    known = f.filter(pl.col("kind").is_not_null())
    # A known header and a trouble word, but not a message we can read: kept, never dropped.
    odd = f.filter(pl.col("kind").is_null() & pl.col("msg").is_not_null()).with_columns(
        kind=pl.lit("unrecognised"), failure_mode=pl.lit("unknown"), severity=pl.lit("warning"))
    ranks = _failed_ranks(known.filter(pl.col("kind") == "ranks_failed"))
    events = pl.concat([known.filter(pl.col("kind") != "ranks_failed"), ranks, odd], how="diagonal_relaxed")
    missing = [pl.lit(None).alias(c) for c in _DETAIL if c not in events.columns]
    if events.height:
        out.add("events", events.with_columns(missing).sort("line").select(
            "line", "ts", "host", "kind", "failure_mode", "severity", "rank", "text",
            json_detail(_DETAIL).alias("detail")))
    restarts = known.filter(pl.col("max_restarts").is_not_null())
    out.add("facts", restarts.select("line", "ts", "host", key=pl.lit("ft_max_restarts"),
                                     value=pl.col("max_restarts").cast(pl.String)))
    # by number, not only counted: files parsed together get their own counts (clusterlab.ingest.groups_text)
    out.unparsed_lines = f.filter(pl.col("msg").is_null())["line"]
    out.unparsed = len(out.unparsed_lines)
    return out


def _fields(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Header fields, time, host, rank, kind and the numbers of every matched line."""
    f = lines.with_columns(pl.col("text").str.extract_groups(_HEADER).alias("h")).unnest("h")
    stamp = pl.coalesce(pl.format("{}.{}", "nts", "nms"), pl.format("{}.{}", "ots", "oms"))
    digit = r"^\d+$"
    rank = pl.coalesce(
        pl.when(pl.col("wrank").str.contains(digit)).then(pl.col("wrank")),
        pl.when(pl.col("orank").str.contains(digit)).then(pl.col("orank")), pl.col("drank"),
    ).cast(pl.Int32, strict=False)
    f = f.with_columns(
        ts=local_to_utc(stamp.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False), ctx.tz),
        host=pl.coalesce("node", "ohost"), rank=rank,
        local_rank=pl.when(pl.col("wlocal").str.contains(digit)).then(pl.col("wlocal")).cast(pl.Int32, strict=False),
        log_pid=pl.col("opid").cast(pl.Int64, strict=False),
        task=pl.col("task").cast(pl.Int32, strict=False),
    )
    kind, mode, severity = first_kind(pl.col("msg"), _KINDS)
    m = pl.col("msg")
    f = f.with_columns(kind=kind, failure_mode=mode, severity=severity)
    health = pl.lit(None, pl.String)
    for rx, hmode in reversed(_HEALTH_MODE):
        health = pl.when(m.str.contains(rx)).then(pl.lit(hmode)).otherwise(health)
    is_health = pl.col("kind") == "health_check_failed"
    left = m.str.extract(r"(\d+)/\d+ (?:restart )?attempts left", 1).cast(pl.Int32, strict=False)
    most = m.str.extract(r"\d+/(\d+) (?:restart )?attempts left", 1).cast(pl.Int32, strict=False)
    return f.with_columns(
        failure_mode=pl.when(is_health).then(health).otherwise(pl.col("failure_mode")),
        # the node a health check names is the one that failed it (the line may come from the store host)
        host=pl.when(is_health).then(pl.coalesce(
            m.str.extract(r"failed for node (\S+?):? ", 1), m.str.extract(r"Node (\S+) (?:has|is) ", 1),
            pl.col("host"))).otherwise(pl.col("host")),
        check=pl.when(is_health).then(m.str.extract(r"((?:\w+ )*?[Hh]ealth check) failed", 1)),
        cycle=m.str.extract(_CYCLE, 1).cast(pl.Int32, strict=False),
        phase=m.str.extract(r"Did not get (initial|subsequent) heartbeat", 1),
        section=pl.when(m.str.contains(r"Was out of section")).then(pl.lit("<out of section>"))
        .otherwise(m.str.extract(r"Section '([^']*)' has been open", 1)),
        elapsed_s=m.str.extract(r"(?:has been open|out of section) for (\d+(?:\.\d+)?) seconds", 1)
        .cast(pl.Float64, strict=False),
        timeout_s=pl.coalesce(m.str.extract(r"Waited (\d+(?:\.\d+)?) seconds", 1),
                              m.str.extract(r"Timeout is (\d+(?:\.\d+)?) seconds", 1)).cast(pl.Float64, strict=False),
        role=m.str.extract(r"^\[(\w+)\] (?:Worker group|Joining)", 1),
        state=m.str.extract(r"Worker group (\w+)\.", 1),
        attempts_left=pl.when(pl.col("kind") == "restart").then(left),
        max_restarts=pl.when(pl.col("kind").is_in(["restart", "restarts_exhausted"])).then(most),
        # restart N of M: the launcher prints how many were left before this one
        restart=pl.when(pl.col("kind") == "restart").then(most - left + 1),
        group_rank=m.str.extract(r"group_rank=(\d+)", 1).cast(pl.Int32, strict=False),
    )


def _failed_ranks(summary: pl.DataFrame) -> pl.DataFrame:
    """One `rank_terminated` event per entry of the launcher's `{rank: ProcessFailure(...)}` summary."""
    if not summary.height:
        return summary
    each = summary.with_columns(_f=pl.col("msg").str.extract_all(_FAILURE)).explode("_f").filter(
        pl.col("_f").is_not_null())
    g = pl.col("_f")
    return each.with_columns(
        kind=pl.lit("rank_terminated"),
        rank=g.str.extract(r"^(\d+):", 1).cast(pl.Int32, strict=False),
        local_rank=g.str.extract(r"local_rank=(\d+)", 1).cast(pl.Int32, strict=False),
        pid=g.str.extract(r"pid=(\d+)", 1).cast(pl.Int64, strict=False),
        exitcode=g.str.extract(r"exitcode=(-?\d+)", 1).cast(pl.Int32, strict=False),
        signal=g.str.extract(r"exitcode=(-\d+)", 1).replace_strict(_SIGNAMES, default=None, return_dtype=pl.String),
    ).drop("_f")
