"""libfabric's own log (FI_LOG_LEVEL=warn|info): the provider under aws-ofi-nccl (EFA) and MPI's OFI layer.

libfabric prints (src/log.c) `libfabric:PID:EPOCH:[FABRIC:]PROV:SUBSYS:FUNC():LINE<LEVEL> message`, the fabric
field only in newer releases, interleaved with the NCCL lines of the same process:

    libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid address ...
    libfabric:462:1673041636:efa:core:rxr_info_to_rxr():506<warn> FI_HMEM capability requires RDMA, which ...
    libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider efa output empty list

A completion that came back in error (a `*handle*error()` of the completion queue, `err: N, message: ...`) is a
transfer the fabric did not deliver: `network`. EFA's names both ends (`My EFA addr: ... My host id: i-0c0d... Peer EFA
addr: ... Peer host id: i-0b96...`): the peer is the event's `peer`, and the host's own instance id a fact that names
the host where another host's error names it as its peer. Every other warning is set-up chatter or a capability the
provider lacks (a warning without a mode); info, debug and trace lines are not events.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, first_kind, json_detail, search

NAME = "libfabric"
EXCLUSIVE = False

PATTERN = r"libfabric:\d+:\S*<(?:warn|error)> "
SNIFF_HINT = (b"libfabric:",)

_HEAD = (r"libfabric:(?P<pid>\d+):(?:(?P<epoch>\d{9,11}):)?(?:[^:\s]*:)?(?P<prov>[\w;.-]+):(?P<subsys>\w+):"
         r"(?P<func>\w+)\(\):(?P<src>\d+)<(?P<level>\w+)> (?P<msg>.*?)\s*$")
# a completion queue's error handler (efa_rdm_txe_handle_error, rxr_cq_handle_tx_error, efa_cq_handle_error ...)
# or its `err: N, message: ...` report
_PEER_ID = r"Peer host id: (i-[0-9a-f]+)"
_COMPLETION_ERROR = r":cq:\w*handle\w*error\(\)|:\w*cq\w*:\w*readerr\w*\(\)|<warn> err: -?\d+, message: "
# (kind, regex, failure mode, severity)
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("ofi_completion_error", _COMPLETION_ERROR, "network", "error"),
    ("ofi_warning", r"", None, "warning"),
]


def sniff(head: bytes, path: str) -> bool:
    """libfabric's own warning lines in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per libfabric warning line; a completion error is a network fault."""
    out = Parsed()
    text = pl.col("text")
    kind, mode, severity = first_kind(text, _KINDS)
    head = text.str.extract_groups(_HEAD)
    part = lines.with_columns(head.alias("h")).filter(pl.col("h").struct.field("pid").is_not_null())
    h = pl.col("h").struct
    msg = h.field("msg")
    out.add("events", part.select(
        pl.col("line").cast(pl.Int64),
        pl.from_epoch(h.field("epoch").cast(pl.Int64, strict=False), time_unit="s").cast(pl.Datetime("us"))
        .alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"),
        kind.alias("kind"), mode.alias("failure_mode"), severity.alias("severity"),
        text.str.strip_chars().alias("text"), msg.str.extract(_PEER_ID, 1).alias("peer"),
        json_detail({"pid": h.field("pid").cast(pl.Int64, strict=False), "provider": h.field("prov"),
                     "subsystem": h.field("subsys"), "function": h.field("func"),
                     "error": msg.str.extract(r"message: (.+?)(?: My EFA addr:|$)", 1),
                     "peer_host_id": msg.str.extract(_PEER_ID, 1)}).alias("detail"),
    ))
    # the instance a completion error names as its own (`My host id: i-0c0d...`): the host it was printed on, so that
    # another host's error naming it as its peer names this host (`incidents.with_hosts`)
    mine = part.select("line", value=msg.str.extract(r"My host id: (i-[0-9a-f]+)", 1)).drop_nulls("value")
    if mine.height:
        out.add("facts", mine.unique("value", keep="first").select(
            "line", host=pl.lit(ctx.host, pl.String), key=pl.lit("cloud_instance_id"), value="value"))
    return out
