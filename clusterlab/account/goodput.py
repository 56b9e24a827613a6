"""The ledger in other tools' words: Google's ml-goodput-measurement buckets and Meta's ETTR.

ml-goodput-measurement reports goodput and badput as percentages of a job's total time, badput by
`BadputType` (names as in its README, "Badput Breakdown Details":
https://github.com/AI-Hypercomputer/ml-goodput-measurement). It counts every training step's time as
goodput, slow or not (step-time deviation is a separate metric), so clusterlab's `straggler`,
`slowdown` and `data_stall` (the excess of slow steps) are goodput there; `differences` lists them.

Meta's Effective Training Time Ratio (Kokolis et al., "Revisiting Reliability in Large-Scale Machine
Learning Research Clusters", HPCA 2025, https://arxiv.org/abs/2410.21680) is productive training
time over the job's wall-clock time, the waits to be rescheduled included. As here, training steps
count in full, lost work after a failure, restarts and saves do not.
"""

from __future__ import annotations

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
    "hang": "OTHER",  # no step progress and no recorded activity: its "unknown source"
    "idle": "OTHER",
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


def goodput(a: attribution.Attribution) -> dict:
    """The run's ledger as ml-goodput-measurement's goodput and badput breakdown (percent of total time),
    Meta's ETTR, and what the two count differently from clusterlab."""
    led = dict(a.ledger.select("category", "gpu_hours").iter_rows())
    total = a.gpu_hours
    pct = {k: 100 * v / total if total else 0.0 for k, v in led.items()}
    badput = {b: 0.0 for b in BADPUT_TYPES}
    good = 0.0
    for cat, bucket in BUCKETS.items():
        if bucket == "GOODPUT":
            good += pct.get(cat, 0.0)
        else:
            badput[bucket] += pct.get(cat, 0.0)
    summed = good + sum(badput.values())
    if total and abs(summed - 100.0) > SUM_TOLERANCE:  # the check the library does not make
        raise GoodputError(f"goodput and badput add up to {summed:.6f} %, not 100 %")
    return {
        "run": a.run, "format": "ml-goodput-measurement", "total_gpu_hours": total,
        "goodput_percent": good, "badput_percent": badput, "sum_percent": summed,
        "ettr": sum(led.get(c, 0.0) for c in ETTR_PRODUCTIVE) / total if total else None,
        "mapping": BUCKETS,
        "differences": {c: pct.get(c, 0.0) for c in ("straggler", "slowdown", "data_stall")},
        "clusterlab_productive_percent": pct.get("productive", 0.0),
    }
