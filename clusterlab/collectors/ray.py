"""Ray's memory monitor: workers Ray itself killed because their node ran out of memory → host_oom events; a node
Ray's control store gave up on → node_failure events.

Ray (2.0+) watches its node's memory and kills a worker past a threshold before the kernel's OOM killer would; the
job then sees a dead actor or task, and only Ray's wording says why (the raylet log, the driver's output, an actor's
exit detail), behind Ray's prefixes (`(raylet) `, `(WorkerDict pid=N, ip=...) `):

    ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.       (2.2+)
    ... Worker exit type: USER_ERROR Worker exit detail: Task was killed due to the node running low on memory.
    (raylet) [2025-11-30 02:14:51,118 E 401271 401271] (raylet) node_manager.cc:3277: 3 Workers (tasks / actors)
        killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: ..., IP: ...) ...
    (raylet) [2022-09-12 08:44:03,102 E 51220 51260] (raylet) node_manager.cc:2963: System memory low at node with
        IP 10.0.8.33. Used memory (58.21GB) / total capacity (61.44GB) (0.947428) exceeds threshold 0.9, killing ...
    ray.exceptions.RayOutOfMemoryError: More than 95% of the memory on node head-1 is used (60.1 / 62.8 GB). ...  (<2)

The GCS marks a node dead when its raylet stops answering health checks (the machine gone, its network cut, the
raylet crashed), and each actor that lived there dies with it:

    ... WARNING worker.py:2058 -- The node with node id: 5d1c... and address: 10.0.3.17 and node name: 10.0.3.17 has
        been marked dead because the detector has missed too many heartbeats from it. This can happen when a ...
    The actor is dead because its node has died. Node Id: 5d1c...                   (an ActorDiedError's detail)

A node Ray's autoscaler took away on purpose (`StandardAutoscaler: Terminating the node with id ... and ip 10.0.3.17.
(idle)`) is marked dead the same way a minute later: that death is the scale-down, no failure (matched by the node's
address, or where the GCS's line names none, by following a termination in the same file within NODE_GONE_S).

The raylet's time and that of Ray's Python logs (`2026-10-02 18:55:12,304\tINFO autoscaler.py:561 -- ...`) are the
node's local time (`ctx.tz`); the other lines carry none.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, file_of_line, json_detail, local_to_utc, search

NAME = "ray"
EXCLUSIVE = False

# a node the GCS stopped hearing from (2.x 'detector', 1.x 'monitor'), and an actor's death detail naming it
_NODE_DEAD = (r"has been marked dead because the (?:detector|monitor) has missed too many heartbeats"
              r"|(?:actor|worker) is dead because its node has died")
# NOTE: the raylet's summary counts both kinds of death: only a count of one or more memory kills is one
PATTERN = "|".join([
    r"Task was killed due to the node running low on memory",
    r"\b[1-9]\d* Workers? \(tasks / actors\) killed due to memory pressure \(OOM\)",
    r"System memory low at node with IP \S+ Used memory",
    r"RayOutOfMemoryError: More than \d+% of the memory on node",
    _NODE_DEAD,
    r"StandardAutoscaler: Terminating the node with id ",
])
SNIFF_HINT = (b"low on memory", b"memory pressure (oom)", b"system memory low", b"rayoutofmemoryerror",
              b"missed too many heartbeats", b"because its node has died")
# the autoscaler's own termination of a node (any reason it gives: idle, outdated, over the type's maximum)
_TERMINATING = r"StandardAutoscaler: Terminating the node with id \S+ and ip (\d{1,3}(?:\.\d{1,3}){3})"
NODE_GONE_S = 300  # how long after the autoscaler terminated a node the GCS may still report it dead
_PY_TS = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\s"

_RAYLET_TS = r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) [DIWEF] \d+ \d+\]"
_NODE_IP = r"(?:at node with IP |\bIP: |\band (?:address|ip): )(\d{1,3}(?:\.\d{1,3}){3})"


def sniff(head: bytes, path: str) -> bool:
    """A memory kill of Ray's in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One host_oom event per line that reports a memory kill."""
    out = Parsed()
    text = pl.col("text")
    stamp = pl.coalesce(text.str.extract(_RAYLET_TS, 1), text.str.extract(_PY_TS, 1)).str.to_datetime(
        "%Y-%m-%d %H:%M:%S", time_unit="us", strict=False)
    ms = pl.coalesce(text.str.extract(_RAYLET_TS, 2), text.str.extract(_PY_TS, 2)).cast(pl.Int64, strict=False)
    lines = lines.with_columns(ts=local_to_utc(stamp, ctx.tz) + pl.duration(milliseconds=ms.fill_null(0)),
                               ip=text.str.extract(_NODE_IP, 1), gone=text.str.extract(_TERMINATING, 1))
    lines = _scaled_down(lines.filter(pl.col("gone").is_null()), lines.filter(pl.col("gone").is_not_null()))
    dead = text.str.contains(_NODE_DEAD)
    detail = json_detail({"node_ip": pl.col("ip")})
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), "ts",
        pl.lit(ctx.host, pl.String).alias("host"),
        # NOTE: the GCS's message lists a raylet's OOM among the possible causes: where Ray's memory monitor killed
        # the workers it says so itself (a line of its own); a node that stopped answering is the node's failure
        pl.when(dead & pl.col("scaled_down")).then(pl.lit("ray_node_scaled_down"))
        .when(dead).then(pl.lit("ray_node_dead")).otherwise(pl.lit("ray_memory_kill")).alias("kind"),
        pl.when(dead & pl.col("scaled_down")).then(pl.lit(None, pl.String))
        .when(dead).then(pl.lit("node_failure")).otherwise(pl.lit("host_oom")).alias("failure_mode"),
        pl.when(dead & pl.col("scaled_down")).then(pl.lit("info")).otherwise(pl.lit("error")).alias("severity"),
        text.str.strip_chars().alias("text"),
        detail.alias("detail"),
    ))
    return out


def _scaled_down(rows: pl.DataFrame, terminations: pl.DataFrame) -> pl.DataFrame:
    """`rows` with `scaled_down`: the node it reports dead is one the autoscaler terminated before it (by address,
    else by time: a termination in the same file at most NODE_GONE_S before)."""
    t = terminations.select(_f=file_of_line(), _ip="gone", _at="ts")
    pairs = rows.select("line", "ip", "ts", _f=file_of_line()).join(t, on="_f")
    known = pl.col("ts").is_not_null() & pl.col("_at").is_not_null()
    before = ~known | (pl.col("_at") <= pl.col("ts"))
    hit = (pl.when(pl.col("ip").is_not_null()).then(pl.col("ip") == pl.col("_ip"))
           .otherwise(known & (pl.col("ts") - pl.col("_at") <= pl.duration(seconds=NODE_GONE_S))))
    return rows.with_columns(scaled_down=pl.col("line").is_in(pairs.filter(before & hit)["line"].implode()))
