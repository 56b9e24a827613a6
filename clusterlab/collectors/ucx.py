"""UCX, the transport under Open MPI / HPC-X (and its MPI-launched training and benchmark jobs) → network events.

UCX logs its own errors, and Open MPI's UCX layer says which peer it could not reach:

    [1719157763.321281] [node2:19381:0]   ib_device.c:1163 UCX  ERROR   ibv_create_ah(...) failed: Connection timed out
    [node2:19381:0:19381]    ud_iface.c:732  UCX Fatal: transport error: Endpoint timeout
    [node2:19381] pml_ucx.c:424  Error: ucp_ep_create(proc=2) failed: Endpoint timeout
    [node2:19381] pml_ucx.c:472  Error: Failed to resolve UCX endpoint for rank 9

behind any mpirun tag (`[1,8]<stderr>:`, with --timestamp-output a date before it). The host is the first field of
the `[host:pid...]` prefix. An endpoint that times out or a peer that cannot be reached is the fabric's fault
(`network`); the `Destination is unreachable` of a wrongly chosen interface looks the same from here.

A work request that completes in error on an mlx5 device is logged by UCX's mlx5 layer without the `UCX ERROR`
tag, in each release's words (1.5, 1.8, 1.15 below), the QP and work request on a second line:

    [cn0815:6807 :0:6807] ib_mlx5_log.c:115  FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry count
        exceeded (synd 0x15 vend 0x81) opcode SEND                                      (one line)
    ib_mlx5_log.c:132  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)
    [gn7:2330856:0:2330856] ib_mlx5_log.c:177  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 ...)
    [gn7:2330856:0:2330856] ib_mlx5_log.c:177  DCI QP 0xd16 wqe[6168]: SEND s-e [rqpn 0x17de rlid 1037] ...

A retry count exceeded (the peer's port never acknowledged), a remote access or operation error, a bad response:
the fabric or the peer's NIC (`network`). A local protection or length error, a flushed request: the process's
own memory registration or the aftermath of another error (a warning, no mode).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, first_kind, json_detail, search

NAME = "ucx"
EXCLUSIVE = False

# ... and by its verbs transports without the mlx5 accelerator (rc_verbs, ud_verbs), one line:
#     [cn041:71822:0:71822] rc_verbs_iface.c:63   FATAL: send completion with error: transport retry counter exceeded
_VERBS_FAULT = (r"\b(?:rc|ud|dc)_verbs\w*\.c:\d+ +FATAL: \w+ completion with error: .*(?:retry counter exceeded"
                r"|[Rr]emote (?:access|operation|invalid request) error)")
PATTERN = "|".join([
    r"UCX +(?:ERROR|Fatal)\b",
    r"pml_ucx\.c:\d+ +Error: ",
    # an mlx5 completion error's first line, not its `DCI QP 0x.. wqe[N]: SEND ...` detail line
    r"ib_mlx5_log\.c:\d+ +(?:FATAL: |[A-Z][a-z]+(?: [A-Za-z]+)* (?:error|exceeded)\b)",
    _VERBS_FAULT,
])
SNIFF_HINT = (b"ucx", b"pml_ucx", b"ib_mlx5_log", b"_verbs")

_PREFIX = r"\[(?P<host>[A-Za-z][\w.-]*):(?P<pid>\d+) ?(?::\d+)*\] +(?P<src>[\w./-]+:\d+)"
_MLX5_FAULT = (r"ib_mlx5_log\.c:\d+ .*(?:retry count exceeded|[Rr]emote (?:access|OP|operation|invalid request) "
               r"error|[Bb]ad response error)")
# (kind, regex, failure mode, severity)
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("ucx_transport_error", r"UCX +Fatal: transport error", "network", "error"),
    ("ucx_endpoint_failed", r"ucp_ep_create\(.*\) failed: |Failed to resolve UCX endpoint", "network", "error"),
    ("ucx_error", r"UCX +ERROR .*(?:[Tt]imed? ?out|[Uu]nreachable|[Cc]onnection (?:refused|reset)"
                  r"|not connected|[Rr]emote (?:access|operation) error|retry exceeded)", "network", "error"),
    ("ucx_completion_error", _MLX5_FAULT, "network", "error"),
    ("ucx_completion_error", _VERBS_FAULT, "network", "error"),
    ("ucx_completion_error", r"ib_mlx5_log\.c:\d+ ", None, "warning"),
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
                     "error": pl.coalesce(text.str.extract(r"failed: ([^\r\n]+?)\s*$", 1),
                                          text.str.extract(r"ib_mlx5_log\.c:\d+ +(?:FATAL: Error on \S+ QP \S+ "
                                                           r"wqe\[\d+\]: )?(.+?)(?: on \S+)? \(synd", 1)),
                     "hca": text.str.extract(r"\b(mlx5_\w+:\d+)", 1)}).alias("detail"),
    ))
    return out
