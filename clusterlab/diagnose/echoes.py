"""Peers' completion errors after a rank died of its own error: that death's echo, not a fault of the fabric.

When one rank's process dies (out of memory, an illegal address, an exception in the job's own code), the
transfers its peers had posted to it fail, and NCCL's IB and OFI transports report the failed work completion on
every host that was talking to it (`NET/IB : Got completion from peer ... with error 12`, `NET/OFI Request ...
completed with error`). Such a line outranks the death (a completion error names a fault of the fabric where nothing
else explains it), and an unstamped one borrows the last stamp above it, which can put it before the death it
follows. A completion error printed after a rank's death, within the time peers take to notice it, is a symptom of
that death; one printed before any death (the fabric failed first, the ranks then died of it) keeps its rank.
"After" is read from what the lines can tell: the death's interval ends before the error's begins, or both are in
one file and the death is printed above it. A death the job stepped past (`progressed`) made no echo.
"""

from __future__ import annotations

import polars as pl

from clusterlab.diagnose import incidents

ECHO_KINDS = ("ib_completion_error", "ofi_completion_error")
# A rank's own way to die: errors a fault of the fabric does not raise (its ranks time out or abort on it instead)
DEATH_MODES = ("cuda_oom", "cuda_error", "host_oom", "user_code_error", "loss_divergence", "filesystem_io")
# How long after a rank's death its peers may report their transfers to it failing: IB's retry timeout is seconds
# at NCCL's defaults (4.096 us x 2^20 x 7 retries, 30 s); EFA's is of the same order
ECHO_WITHIN_S = 120.0


def as_symptoms(cand: pl.DataFrame) -> pl.DataFrame:
    """`cand` (with `_with_progress_flags`' columns) with each echo's tier lowered to the symptoms' tier."""
    keys = ["run", "attempt"]
    echo = pl.col("kind").is_in(ECHO_KINDS) & (pl.col("failure_mode") == "network")
    if not cand.select(echo.any()).item():
        return cand
    rows = cand.with_row_index("_echo_row")
    deaths = rows.filter(pl.col("failure_mode").is_in(DEATH_MODES), ~pl.col("progressed"),
                         pl.col("tier") > incidents.SYMPTOM_TIER).select(
        *keys, d_lo="ts_lo", d_hi="ts_hi", d_file="file", d_line="line")
    echoes = rows.filter(echo).select("_echo_row", *keys, "ts_lo", "ts_hi", "file", "line")
    if not deaths.height:
        return cand
    after = ((pl.col("d_hi") <= pl.col("ts_lo"))
             | ((pl.col("d_file") == pl.col("file")) & (pl.col("d_line") < pl.col("line"))
                & (pl.col("d_lo") <= pl.col("ts_lo"))))
    soon = pl.col("ts_lo") <= pl.col("d_hi") + pl.duration(seconds=ECHO_WITHIN_S)
    hit = echoes.join(deaths, on=keys).filter(after & soon)["_echo_row"].unique()
    if not hit.len():
        return cand
    lower = pl.col("_echo_row").is_in(hit.implode())
    return rows.with_columns(tier=pl.when(lower).then(pl.lit(incidents.SYMPTOM_TIER)).otherwise(pl.col("tier"))
                             .cast(cand.schema["tier"])).drop("_echo_row")
