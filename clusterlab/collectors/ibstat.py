"""`ibstat` output (infiniband-diags) → one event per HCA port: its link state, and whether the fabric lost it.

ibstat prints each channel adapter, then each of its ports, indented by tabs (or spaces, when pasted):

    CA 'mlx5_3'
            CA type: MT4129
            Number of ports: 1
            Firmware version: 28.39.1002
            Port 1:
                    State: Down
                    Physical state: Polling
                    Rate: 10
                    Link layer: InfiniBand

What a port's state means (the IB logical state, then the physical one):
- `State: Active` over `Physical state: LinkUp`: the port is up (info).
- `Physical state: Polling` (the port looks for a peer and finds none: a cable, transceiver or switch port gone) or
  `LinkErrorRecovery`, or `State: Down` with any physical state but `Disabled`: the link is down (network, error).
- `State: Initializing` / `Armed` over `LinkUp`: the cable is fine but no subnet manager brought the port up; traffic
  cannot use it yet (network, warning).
- `Physical state: Disabled`: switched off on purpose (or an unused port): a warning without a failure mode.
The output names no host (the bundle's `nodes/<host>/` does, or pdsh's `<node>: ` prefix) and no time: its
events are undated.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, file_of_line, json_detail

NAME = "ibstat"
FILE_HOST_COLUMN = True  # parsed with other files, the lines carry their file's host (ctx.host) as `file_host`
EXCLUSIVE = True
SNIFF_HINT = (b"ca '",)

# pdsh / clush print each node's lines behind `<node>: ` (interleaved with the other nodes' lines)
_NODE = r"^(?:(?P<node>[A-Za-z0-9][\w.-]*): )?"
_SPLIT = _NODE + r"(?P<rest>.*)$"
_CA = r"^CA '(?P<ca>[^']+)'\s*$"
_PORT = r"^\s+Port (?P<port>\d+):\s*$"
_KV = r"^\s+(?P<key>CA type|Firmware version|State|Physical state|Rate|Link layer):\s*(?P<val>.*?)\s*$"
_ANY_NODE = r"^(?:[A-Za-z0-9][\w.-]*: )?"
PATTERN = (_ANY_NODE + r"(?:CA '[^']+'\s*$|\s+Port \d+:\s*$"
           r"|\s+(?:CA type|Firmware version|State|Physical state|Rate|Link layer):)")
BLOCK_START = _ANY_NODE + r"CA '"
_PORT_KEYS = ["State", "Physical state", "Rate", "Link layer"]
_FOLLOWS = ("CA type:", "Number of ports:", "Port ", "State:", "Physical state:")

_DOWN_PHYS = ["Polling", "LinkErrorRecovery", "Sleep", "PortConfigurationTraining", "PhyTest"]
_NOT_ACTIVE = ["Initializing", "Init", "Armed"]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context (no time; the host is the file's, `file_host`, where no pdsh prefix names
    one): any ibstat outputs may be parsed together."""
    return ()


def sniff(head: bytes, path: str) -> bool:
    """ibstat output: a `CA '<name>'` line followed by its `CA type:`, `Number of ports:` or port lines (a grep
    may have kept only some of them), each line perhaps behind pdsh's `<node>: `."""
    lines = pl.Series(head.decode("utf-8", "replace").splitlines()[:400], dtype=pl.String)
    rest = [ln.strip() for ln in lines.str.extract(_SPLIT, 2).to_list() if ln and ln.strip()]
    return any(ln.startswith("CA '") and ln.endswith("'") and any(x.startswith(_FOLLOWS) for x in rest[i + 1:i + 4])
               for i, ln in enumerate(rest))


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One event per port of the batch's adapters."""
    out = Parsed()
    own = pl.col("file_host") if "file_host" in lines.columns else pl.lit(ctx.host, pl.String)
    frame = lines.select("line", "text", own.alias("file_host"), file_of_line().alias("_f"),
                         pl.col("text").str.extract_groups(_SPLIT).alias("_s")).unnest("_s")
    frame = frame.select(
        "line", "text", "node", "file_host", "_f",
        pl.col("rest").str.extract(_CA, 1).alias("ca"),
        pl.col("rest").str.extract(_PORT, 1).cast(pl.Int32, strict=False).alias("port"),
        pl.col("rest").str.extract_groups(_KV).alias("_kv"),
    ).unnest("_kv").with_columns(pl.col("node").fill_null(""))
    # NOTE: a port belongs to the adapter above it and a key to the port above it (the adapter's own keys come
    # first), both of the same node (pdsh interleaves the nodes' lines) and the same file (`_f`: files parsed
    # together; a file's first keys never belong to the adapter another file ends with)
    who = ["_f", "node"]
    frame = frame.with_columns(pl.col("ca").forward_fill().over(who),
                               block=pl.col("ca").is_not_null().cum_sum().over(who))
    frame = frame.with_columns(pl.col("port").forward_fill().over(*who, "block"))
    port_key = pl.col("key").is_in(_PORT_KEYS)
    adapters = frame.filter(pl.col("key").is_not_null() & ~port_key).group_by(*who, "block").agg(
        _val("CA type").alias("ca_type"), _val("Firmware version").alias("firmware"))
    # NOTE: a port's keys under no `Port N:` line (`ibstat | grep -E "CA '|State"`) are still its adapter's port
    ports = frame.filter(pl.col("ca").is_not_null() & (pl.col("port").is_not_null() | port_key))
    out.unparsed_lines = frame.filter(pl.col("ca").is_null())["line"]  # keys before any adapter line: not guessed
    out.unparsed = len(out.unparsed_lines)
    if not ports.height:
        return out
    g = ports.group_by(*who, "block", "ca", "port").agg(
        pl.col("line").first(), pl.col("file_host").first(), _val("State").alias("state"),
        _val("Physical state").alias("phys"), _val("Rate").alias("rate"), _val("Link layer").alias("link_layer"),
    ).join(adapters, on=[*who, "block"], how="left").sort("line")
    out.add("events", _events(g, ctx))
    return out


def _val(key: str) -> pl.Expr:
    return pl.col("val").filter(pl.col("key") == key).first()


def _events(g: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Kind, failure mode and severity of each port from its logical and physical state."""
    state, phys = pl.col("state").fill_null(""), pl.col("phys").fill_null("")
    disabled = phys == "Disabled"
    down = phys.is_in(_DOWN_PHYS) | ((state == "Down") & ~disabled)
    idle = state.is_in(_NOT_ACTIVE)
    kind = (pl.when(down).then(pl.lit("ib_port_down")).when(idle).then(pl.lit("ib_port_not_active"))
            .when(disabled).then(pl.lit("ib_port_disabled")).otherwise(pl.lit("ib_port_state")))
    mode = pl.when(down | idle).then(pl.lit("network")).otherwise(pl.lit(None, pl.String))
    severity = (pl.when(down).then(pl.lit("error")).when(idle | disabled).then(pl.lit("warning"))
                .when(state == "Active").then(pl.lit("info")).otherwise(pl.lit("warning")))
    rate = pl.col("rate").str.extract(r"^(\d+)", 1).cast(pl.Int64, strict=False)
    return g.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, TABLE_COLUMNS["events"]["ts"]).alias("ts"),
        pl.when(pl.col("node") != "").then(pl.col("node")).otherwise(pl.col("file_host")).alias("host"),
        kind.alias("kind"), mode.alias("failure_mode"),
        severity.alias("severity"), pl.lit(None, pl.Int32).alias("xid"), pl.lit(None, pl.String).alias("pci_bus"),
        pl.format("ibstat: {} port {}: State {}, Physical state {}, Rate {}", "ca", pl.col("port").fill_null("?"),
                  pl.col("state").fill_null("?"), pl.col("phys").fill_null("?"), pl.col("rate").fill_null("?")
                  ).alias("text"),
        json_detail({"ca": pl.col("ca"), "port": pl.col("port"), "state": pl.col("state"),
                     "physical_state": pl.col("phys"), "rate_gbps": rate, "link_layer": pl.col("link_layer"),
                     "ca_type": pl.col("ca_type"), "firmware": pl.col("firmware")}).fill_null("{}").alias("detail"),
    )
