"""Line envelopes: what a container runtime, `kubectl logs --timestamps` or a log store's export puts before every
line a program printed.

    2026-12-07T08:57:52.478900108Z stderr F E1207 08:57:52.478690 1 torch/distributed/...] failed (exitcode: 1) ...
    2026-12-07T08:57:52.478900108Z [rank0]:[titan] 2026-12-07 08:57:52,478 - root - INFO - step: 10 ...

The first is the CRI log format the kubelet keeps under /var/log/pods (containerd, CRI-O: time, stream, `F` for a
full line or `P` for a piece of one cut at 16 KiB); the second is `kubectl logs --timestamps` (and `docker logs -t`).
Every collector reads the program's own line, so the envelope is taken off before sniffing and parsing, and its
time (the runtime's receipt of the line, the node's clock) dates the rows of lines that print no time of their own.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import FILE_LINE_BASE, fraction, offset_to_utc

_STAMP = r"(?P<env_base>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<env_frac>\d{1,9}))?(?P<env_off>Z|[+-]\d\d:\d\d)"
CRI = rf"^{_STAMP} (?:stdout|stderr) (?P<env_tag>[FP]) ?"
# NOTE: kubectl's stamp is RFC3339Nano in UTC (a fraction, `Z`): journalctl's short-iso-precise (`+00:00`) and dmesg's
# iso (`,123456+00:00`) never take this shape, so a kernel log keeps its own prefix (and its host)
KUBECTL = r"^(?P<env_base>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(?P<env_frac>\d{1,9})(?P<env_off>Z) "
# Grafana Loki's `logcli query` (its default output): the entry's time (RFC3339, as received by the shipper), the
# stream's labels that are not common to every stream, the line (`2026-12-01T09:20:08Z {host="gpu-a006"} Dec  1
# 08:53:02 gpu-a006 kernel: NVRM: Xid ...`). The time is the shipper's: the line's own stamp, where it has one, wins
LOGCLI = (r"^(?P<env_base>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<env_frac>\d{1,9}))?(?P<env_off>Z|[+-]\d\d:\d\d) "
          r"\{(?:[\w.]+=\"(?:[^\"\\]|\\.)*\"(?:, ?)?)*\} ")
KINDS = {"cri": CRI, "kubectl": KUBECTL, "logcli": LOGCLI}
SAMPLE_LINES = 40
# NOTE: every file's head is sniffed: Python's `re` on 40 lines costs microseconds where a polars Series costs ~0.6 ms
# of fixed overhead a file (1 s of a 1,540-file corpus); the patterns are plain enough to mean the same in both
_SNIFF = {kind: re.compile(rx) for kind, rx in KINDS.items()}


def sniff_envelope(head: bytes) -> str | None:
    """`cri` or `kubectl` when each of the head's first whole non-blank lines (three at least) wears that envelope."""
    lines = [ln for ln in head[:16384].decode("utf-8", "replace").split("\n")[:-1] if ln.strip()][:SAMPLE_LINES]
    if len(lines) < 3:
        return None
    for kind, rx in _SNIFF.items():
        if all(rx.match(ln) for ln in lines):
            return kind
    return None


def unwrap_head(head: bytes, kind: str) -> bytes:
    """The head as the program printed it (what the collectors sniff)."""
    text = pl.Series(head.decode("utf-8", "replace").split("\n"), dtype=pl.String)
    return "\n".join(text.str.replace(KINDS[kind], "").to_list()).encode()


def unwrap(frame: pl.DataFrame, kind: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`frame` (line, text) without the envelope, and the envelope's time of each line (line, ts: naive UTC).

    CRI pieces (`P`) are joined to the line they continue, numbered as its first piece; a line without the envelope
    (a file cut, a stray write) is kept as it is, undated."""
    f = frame.with_columns(pl.col("text").str.extract_groups(KINDS[kind]).alias("_e")).unnest("_e")
    ts = offset_to_utc(pl.col("env_base").str.to_datetime("%Y-%m-%dT%H:%M:%S", time_unit="us", strict=False)
                       + fraction(pl.col("env_frac")), pl.col("env_off"), "UTC")
    f = f.with_columns(ts.alias("ts"), pl.col("text").str.replace(KINDS[kind], "").alias("text"))
    if "env_tag" in f.columns and bool((pl.Series(f["env_tag"]) == "P").any()):
        # a piece ends its line only when the next row is not a piece of the same line
        # (nor across files: lines of files parsed together are numbered `file index x FILE_LINE_BASE + line`)
        starts = ((pl.col("env_tag").shift(1) != "P").fill_null(True)
                  | (pl.col("line") // FILE_LINE_BASE != (pl.col("line") // FILE_LINE_BASE).shift(1)).fill_null(True))
        f = (f.with_columns(starts.cum_sum().alias("_g"))
             .group_by("_g", maintain_order=True)
             .agg(pl.col("line").first(), pl.col("text").str.join(""), pl.col("ts").first()))
    return f.select("line", "text"), f.select("line", "ts").filter(pl.col("ts").is_not_null())
