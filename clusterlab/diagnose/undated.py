"""When a cause that carries no time at all happened: a line of an attempt's own files with no stamp and no stamped
neighbour (an NCCL debug file written without timestamps) lies somewhere in its attempt (`incidents.UNDATED_TIER`).

Its candidate stands at the attempt's last step (nothing shows it came before progress stopped), which may be a
logging interval before the fault. Where the same failure shows afterwards in a line with a time (PyTorch's watchdog
taking the process down on the network error, dated at its death), that is when the failure was seen.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.diagnose import incidents


def root(winner: dict, live: pl.DataFrame) -> dt.datetime | None:
    """The first time a line of the winner's failure mode, dated or dated by an interval, shows it at or after the
    undated winner's point; None for any other winner or where no such line is (`root_cause._root_time` decides)."""
    if winner.get("tier") != incidents.UNDATED_TIER or not live.height or winner.get("ts") is None:
        return None
    same = live.filter(pl.col("run") == winner["run"], pl.col("attempt") == winner["attempt"],
                       pl.col("failure_mode") == winner["failure_mode"], pl.col("tier") != incidents.UNDATED_TIER,
                       pl.col("ts") >= winner["ts"])
    return same["ts"].min() if same.height else None
