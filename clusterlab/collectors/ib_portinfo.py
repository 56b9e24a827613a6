"""InfiniBand PortInfo dumps (`ibportstate <lid> <port>`, `smpquery portinfo <lid> <port>`) → one event per port.

Where `ibstat` shows a host's own HCA ports, these tools ask the subnet manager's view of any port in the fabric (a
switch's leaf port a GPU node hangs off, a node's HCA from the management host), and print its PortInfo attribute
as dotted key/value lines under a `# Port info:` header (`ibportstate` first prints `PortInfo:`):

    # Port info: Lid 412 port 23
    LinkState:.......................Down
    PhysLinkState:...................Polling
    LinkWidthActive:.................4X
    LinkSpeedActive:.................2.5 Gbps

What a port's state means (the IB logical state, then the physical one), as for ibstat (collectors.ibstat):
- `LinkState: Active` over `PhysLinkState: LinkUp`: the port is up (info).
- `PhysLinkState: Polling` (looking for a peer and finding none: a cable, a transceiver or the far port gone) or
  `LinkErrorRecovery`, or `LinkState: Down` over any physical state but `Disabled`: the link is down (network, error).
- `LinkState: Initialize` / `Armed` over `LinkUp`: cabled, but no subnet manager brought it up (network, warning).
- `PhysLinkState: Disabled`: switched off on purpose (or unused): a warning without a failure mode.
The dump names no time and no host of its own (the port is the fabric's, named by LID and port; the event is put on
the file's host, or pdsh's `<node>: ` prefix): its events are undated.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, file_of_line, json_detail

NAME = "ib_portinfo"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = True
SNIFF_HINT = (b"port info:",)

# pdsh / clush print each node's lines behind `<node>: ` (interleaved with the other nodes' lines)
_ANY_NODE = r"^(?:[A-Za-z0-9][\w.-]*: )?"
_SPLIT = r"^(?:(?P<node>[A-Za-z0-9][\w.-]*): )?(?P<rest>.*)$"
# NOTE: the Mellanox extension's block (`# MLNX ext Port info: ...`) repeats the port with speed fields only: not
# a port of its own
_HEADER = r"^\s*# Port info: (?P<target>.*?)\s*$"
_KEYS = ["LinkState", "PhysLinkState", "LinkWidthActive", "LinkSpeedActive"]
_KV = rf"^\s*(?P<key>{'|'.join(_KEYS)}):\.+(?P<val>.*?)\s*$"
PATTERN = _ANY_NODE + rf"\s*(?:# Port info: |(?:{'|'.join(_KEYS)}):\.)"
BLOCK_START = _ANY_NODE + r"\s*# Port info: "
# `Lid 412 port 23`, or a directed route's `DR path slid 65535; dlid 65535; 0,1,7 port 1`
_LID = r"\bLid (?P<lid>\d+) port (?P<port>\d+)"
_DR_PORT = r"\bport (?P<port>\d+)\s*$"

_DOWN_PHYS = ["Polling", "LinkErrorRecovery", "Sleep", "PortConfigurationTraining", "PhyTest"]
_NOT_ACTIVE = ["Initialize", "Init", "Armed"]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (no time; the host is the file's, `file_host`, where no pdsh prefix names
    one): any PortInfo dumps may be parsed together."""
    return ()


def sniff(head: bytes, path: str) -> bool:
    """A PortInfo dump: a `# Port info:` header with a dotted `LinkState:` or `PhysLinkState:` line a few lines
    under it (each line perhaps behind pdsh's `<node>: `)."""
    rest = pl.Series(head.decode("utf-8", "replace").splitlines()[:400], dtype=pl.String).str.extract(_SPLIT, 2)
    lines = [ln.strip() for ln in rest.to_list() if ln and ln.strip()]
    return any(ln.startswith("# Port info: ") and any(x.startswith(("LinkState:.", "PhysLinkState:."))
                                                        for x in lines[i + 1:i + 4])
               for i, ln in enumerate(lines))


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per `# Port info:` block of the batch that names a link state."""
    out = Parsed()
    own = pl.col("file_host") if "file_host" in lines.columns else pl.lit(ctx.host, pl.String)
    frame = lines.select("line", own.alias("file_host"), file_of_line().alias("_f"),
                         pl.col("text").str.extract_groups(_SPLIT).alias("_s")).unnest("_s")
    frame = frame.select(
        "line", "file_host", "_f", pl.col("node").fill_null(""),
        pl.col("rest").str.extract(_HEADER, 1).alias("target"),
        pl.col("rest").str.extract_groups(_KV).alias("_kv"),
    ).unnest("_kv")
    # NOTE: a key belongs to the header above it, of the same node (pdsh interleaves the nodes' lines) and the same
    # file (`_f`: files parsed together; a file's first keys never belong to the port another file ends with)
    who = ["_f", "node"]
    frame = frame.with_columns(pl.col("target").forward_fill().over(who),
                               block=pl.col("target").is_not_null().cum_sum().over(who))
    out.unparsed_lines = frame.filter(pl.col("target").is_null())["line"]  # keys under no header: not guessed
    out.unparsed = len(out.unparsed_lines)
    ports = frame.filter(pl.col("target").is_not_null()).group_by(*who, "block").agg(
        pl.col("line").first(), pl.col("file_host").first(), pl.col("target").first(),
        *[_val(k).alias(k) for k in _KEYS]).filter(pl.col("LinkState").is_not_null()
                                                    | pl.col("PhysLinkState").is_not_null()).sort("line")
    if ports.height:
        out.add("events", _events(ports))
    return out


def _val(key: str) -> pl.Expr:
    return pl.col("val").filter(pl.col("key") == key).first()


def _events(g: pl.DataFrame) -> pl.DataFrame:
    """Kind, failure mode and severity of each port from its logical and physical state."""
    state, phys = pl.col("LinkState").fill_null(""), pl.col("PhysLinkState").fill_null("")
    disabled = phys == "Disabled"
    down = phys.is_in(_DOWN_PHYS) | ((state == "Down") & ~disabled)
    idle = state.is_in(_NOT_ACTIVE)
    kind = (pl.when(down).then(pl.lit("ib_port_down")).when(idle).then(pl.lit("ib_port_not_active"))
            .when(disabled).then(pl.lit("ib_port_disabled")).otherwise(pl.lit("ib_port_state")))
    mode = pl.when(down | idle).then(pl.lit("network")).otherwise(pl.lit(None, pl.String))
    severity = (pl.when(down).then(pl.lit("error")).when(idle | disabled).then(pl.lit("warning"))
                .when(state == "Active").then(pl.lit("info")).otherwise(pl.lit("warning")))
    lid = pl.col("target").str.extract(_LID, 1).cast(pl.Int64, strict=False)
    port = pl.coalesce(pl.col("target").str.extract(_LID, 2), pl.col("target").str.extract(_DR_PORT, 1))
    return g.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.when(pl.col("node") != "").then(pl.col("node")).otherwise(pl.col("file_host")).alias("host"),
        kind.alias("kind"), mode.alias("failure_mode"),
        severity.alias("severity"), pl.lit(None, pl.Int32).alias("xid"), pl.lit(None, pl.String).alias("pci_bus"),
        pl.format("PortInfo {}: LinkState {}, PhysLinkState {}", "target", pl.col("LinkState").fill_null("?"),
                  pl.col("PhysLinkState").fill_null("?")).alias("text"),
        json_detail({"target": pl.col("target"), "lid": lid, "port": port.cast(pl.Int64, strict=False),
                     "state": pl.col("LinkState"), "physical_state": pl.col("PhysLinkState"),
                     "width": pl.col("LinkWidthActive"), "speed": pl.col("LinkSpeedActive")}
                    ).fill_null("{}").alias("detail"),
    )
