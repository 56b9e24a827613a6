"""The ledger in other tools' words: Google's ml-goodput-measurement buckets and Meta's ETTR.

ml-goodput-measurement reports goodput and badput as percentages of a job's total time, badput by
`BadputType` (names as in its README, "Badput Breakdown Details":
https://github.com/AI-Hypercomputer/ml-goodput-measurement). It counts every training step's time as
goodput, slow or not (step-time deviation is a separate metric), so clusterlab's `straggler`,
`slowdown` and `data_stall` (the excess of slow steps) are goodput there. A disruption is seen there when the
job starts again: the time from its last step to the restart is `INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION`
(clusterlab's `hang` and `restart`), the steps the restart ran again `WASTED_PROGRESS_FROM_DISRUPTION`. At the
run's last attempt no restart follows: its steps after the last save (clusterlab's `recompute`, thrown away by
the end, a time limit say) are goodput there, and its silence after the last step (`hang`) is of unknown
source, `OTHER`. `differences` names each of these places with its share.

Meta's Effective Training Time Ratio (Kokolis et al., "Revisiting Reliability in Large-Scale Machine
Learning Research Clusters", HPCA 2025, https://arxiv.org/abs/2410.21680) is productive training
time over the job's wall-clock time, the waits to be rescheduled included. As here, training steps
count in full, lost work after a failure, restarts and saves do not.
"""

from __future__ import annotations

import polars as pl

from clusterlab.account import attribution

# clusterlab category -> ml-goodput-measurement bucket ("GOODPUT" for its goodput)
BUCKETS = {
    "productive": "GOODPUT",
    "straggler": "GOODPUT",  # a slow step is still a step there
    "slowdown": "GOODPUT",
    "data_stall": "GOODPUT",  # the in-step data wait is part of the step's time there
    "checkpoint": "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME",
    "recompute": "WASTED_PROGRESS_FROM_DISRUPTION",
    "restart": "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION",
    # init, training preparation, checkpoint restore and compilation: one span in the evidence
    "startup": "PROGRAM_STARTUP",
    # from the last step to the restart, whatever the cause: there one span with the requeue
    "hang": "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION",
    "idle": "OTHER",
}
# The run's last attempt: no restart follows, so no disruption is seen there (category -> bucket)
AT_END = {"hang": "OTHER", "recompute": "GOODPUT"}
# Where the two models differ: (category, at the run's last attempt or not (None: either), what each says)
DIFFERENCES = {
    "straggler": ("straggler", None, "the excess of slow steps over the baseline is lost time here; a slow step "
                  "is a step there (step-time deviation is a separate metric)"),
    "slowdown": ("slowdown", None, "as straggler, for a slowdown of every host"),
    "data_stall": ("data_stall", None, "the in-step data wait is lost time here; step time there "
                   "(DATA_LOADING_SYNC holds only what the job records around its loader)"),
    "hang": ("hang", False, "a category of its own here (no step progress before the attempt's end), charged to "
             "the fault's incident; there one span with the requeue, from the last step to the restart, in "
             "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"),
    "hang_at_end": ("hang", True, "the run's last attempt: hang here; there no restart follows and no "
                    "disruption is seen, so the time after the last step is of unknown source (OTHER)"),
    "recompute_at_end": ("recompute", True, "the work after the last save before the run's last end (a time limit, "
                         "a preemption) is thrown away here; there no restart ran those steps again: goodput"),
}
# Every BadputType of the library's README, in its order (the export names each, 0 where nothing maps)
BADPUT_TYPES = ["TPU_INITIALIZATION", "TRAINING_PREP", "PROGRAM_STARTUP", "DATA_LOADING_SYNC", "DATA_LOADING_ASYNC",
                "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME", "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME",
                "WASTED_PROGRESS_FROM_DISRUPTION", "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION", "CUSTOM_BADPUT_EVENTS",
                "OTHER"]
# what ETTR counts as productive training time
ETTR_PRODUCTIVE = ("productive", "straggler", "slowdown", "data_stall")
SUM_TOLERANCE = 1e-6  # percent


class GoodputError(ValueError):
    """The buckets do not add up to 100 % (never clamped)."""


def _shares(a: attribution.Attribution) -> pl.DataFrame:
    """Percent of the run's GPU-hours per (category, at_end): at_end marks the run's last attempt."""
    rows = a.rows
    last = rows["attempt"].max() if rows.height else None
    total = a.gpu_hours
    return (rows.group_by("category", at_end=pl.col("attempt") == last).agg(pl.col("gpu_hours").sum())
            .with_columns(pct=100 * pl.col("gpu_hours") / total if total else pl.lit(0.0)))


def goodput(a: attribution.Attribution) -> dict:
    """The run's ledger as ml-goodput-measurement's goodput and badput breakdown (percent of total time),
    Meta's ETTR, and what the two count differently from clusterlab."""
    led = dict(a.ledger.select("category", "gpu_hours").iter_rows())
    total = a.gpu_hours
    shares = _shares(a)
    badput = {b: 0.0 for b in BADPUT_TYPES}
    good = 0.0
    for cat, at_end, pct in shares.select("category", "at_end", "pct").iter_rows():
        bucket = AT_END.get(cat, BUCKETS[cat]) if at_end else BUCKETS[cat]
        if bucket == "GOODPUT":
            good += pct
        else:
            badput[bucket] += pct
    summed = good + sum(badput.values())
    if total and abs(summed - 100.0) > SUM_TOLERANCE:  # the check the library does not make
        raise GoodputError(f"goodput and badput add up to {summed:.6f} %, not 100 %")
    pct_of = {(c, e): p for c, e, p in shares.select("category", "at_end", "pct").iter_rows()}
    differences = {
        name: {"percent": sum(p for (c, e), p in pct_of.items() if c == cat and (at_end is None or e == at_end)),
               "how": how}
        for name, (cat, at_end, how) in DIFFERENCES.items()}
    return {
        "run": a.run, "format": "ml-goodput-measurement", "total_gpu_hours": total,
        "goodput_percent": good, "badput_percent": badput, "sum_percent": summed,
        "ettr": sum(led.get(c, 0.0) for c in ETTR_PRODUCTIVE) / total if total else None,
        "mapping": BUCKETS, "mapping_at_end": AT_END, "differences": differences,
        "clusterlab_productive_percent": 100 * led.get("productive", 0.0) / total if total else 0.0,
    }
