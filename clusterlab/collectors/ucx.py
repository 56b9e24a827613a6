"""UCX, the transport under Open MPI / HPC-X (and its MPI-launched training and benchmark jobs) → network events.

UCX logs its own errors, and Open MPI's UCX layer says which peer it could not reach:

    [1719157763.321281] [node2:19381:0]   ib_device.c:1163 UCX  ERROR   ibv_create_ah(...) failed: Connection timed out
    [node2:19381:0:19381]    ud_iface.c:732  UCX Fatal: transport error: Endpoint timeout
    [node2:19381] pml_ucx.c:424  Error: ucp_ep_create(proc=2) failed: Endpoint timeout
    [node2:19381] pml_ucx.c:472  Error: Failed to resolve UCX endpoint for rank 9

behind any mpirun tag (`[1,8]<stderr>:`, with --timestamp-output a date before it). The host is the first field of
the `[host:pid...]` prefix. An endpoint that times out or a peer that cannot be reached is the fabric's fault
(`network`); the `Destination is unreachable` of a wrongly chosen interface looks the same from here.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, first_kind, json_detail, search

NAME = "ucx"
EXCLUSIVE = False

PATTERN = "|".join([
    r"UCX +(?:ERROR|Fatal)\b",
    r"pml_ucx\.c:\d+ +Error: ",
])
SNIFF_HINT = (b"ucx", b"pml_ucx")

_PREFIX = r"\[(?P<host>[A-Za-z][\w.-]*):(?P<pid>\d+)(?::\d+)*\] +(?P<src>[\w./-]+:\d+)"
# (kind, regex, failure mode, severity)
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("ucx_transport_error", r"UCX +Fatal: transport error", "network", "error"),
    ("ucx_endpoint_failed", r"ucp_ep_create\(.*\) failed: |Failed to resolve UCX endpoint", "network", "error"),
    ("ucx_error", r"UCX +ERROR .*(?:[Tt]imed? ?out|[Uu]nreachable|[Cc]onnection (?:refused|reset)"
                  r"|not connected|[Rr]emote (?:access|operation) error|retry exceeded)", "network", "error"),
    ("ucx_error", r"", None, "warning"),
]


def sniff(head: bytes, path: str) -> bool:
    """UCX's own error lines, or Open MPI's UCX layer's, in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One network event per UCX error line."""
    out = Parsed()
    text = pl.col("text")
    kind, mode, severity = first_kind(text, _KINDS)
    pre = text.str.extract_groups(_PREFIX)
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.coalesce(pre.struct.field("host"), pl.lit(ctx.host, pl.String)).alias("host"),
        kind.alias("kind"), mode.alias("failure_mode"), severity.alias("severity"),
        text.str.strip_chars().alias("text"),
        json_detail({"pid": pre.struct.field("pid").cast(pl.Int64, strict=False), "src": pre.struct.field("src"),
                     "peer_rank": text.str.extract(r"(?:proc=|for rank )(\d+)", 1).cast(pl.Int32, strict=False),
                     "error": text.str.extract(r"failed: ([^\r\n]+?)\s*$", 1)}).alias("detail"),
    ))
    return out
