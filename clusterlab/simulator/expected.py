"""The ledger a correct attribution must find, computed from the timeline by the ledger's rules.

Per attempt: `startup` (start → first step begins: its end minus its step time), one interval
per step (the first is its own step time, then end to end), the tail (last step end → attempt
end: a completed save in it is `checkpoint`, the work the root event cut short `recompute`, the rest `hang`) and
`restart` (end → next start).
An interval is `productive` up to the run's baseline b (median step time of all its steps), all of it where no
straggler slowed it and it is within NOISE_SIGMAS robust deviations of the run's step-time noise (jitter is work);
the excess goes to `checkpoint` (up to the save that ran in it), then `data_stall` (the step's
data wait above the run's median data wait), then `straggler` (a host was slow at that step) or
else `slowdown`. Steps begun after the attempt's root event are not steps: the tail (`hang`) starts at the end
of the last step begun before it. Steps past the checkpoint the next attempt resumed from are `recompute`, all
their time but a completed save's (their data stall, straggling or slowdown too: the work was thrown away); for
the last attempt, past its own last completed save (every simulated run ends badly: a failure or the window's
time limit, after which a relaunch would resume from there).
`idle` is 0: the simulation requests no window.

An attempt's span is the scheduler's own record of it, sacct Start to End (every family writes sacct),
so that the ledger sums to GPUs x allocated time; `alloc=False` gives the first to last stamped log line.
"""

from __future__ import annotations

import numpy as np

from clusterlab.simulator import adversarial, endings
from clusterlab.simulator.steps import StepArrays
from clusterlab.simulator.timeline import Attempt, Run

CATEGORIES = ("productive", "straggler", "slowdown", "checkpoint", "data_stall", "recompute", "hang", "restart",
              "startup", "idle")


def baseline_ms(run: Run) -> tuple[float, float]:
    """The run's median step time and median data wait, in ms, over all its steps."""
    steps = np.concatenate([a.steps.step_ms for a in run.attempts])
    data = np.concatenate([a.steps.data_ms for a in run.attempts])
    return float(np.median(steps)), float(np.median(data))


# A step is slowed only where its excess over the baseline is beyond this many robust deviations of the run's own
# step-time noise (clusterlab.account.ledger.NOISE_SIGMAS: the ledger's rule, restated here)
NOISE_SIGMAS = 3.0


def noise_ms(run: Run) -> float:
    """The run's step-time noise: the robust deviation (1.4826 x the median absolute deviation) of its steps'
    intervals (the steps begun before each attempt's root)."""
    iv = np.concatenate([intervals_ms(until_root(a)) for a in run.attempts])
    return 1.4826 * float(np.median(np.abs(iv - np.median(iv))))


def span_ms(att: Attempt, alloc: bool) -> tuple[int, int]:
    """The attempt's span: its log lines, or sacct's Start and End."""
    if alloc:
        return endings.job_start_ms(att.start_ms), endings.job_end_ms(att.end_ms)
    return att.start_ms, att.end_ms


def intervals_ms(s: StepArrays) -> np.ndarray:
    """Each step's interval: the first its own step time, then end to end."""
    return np.concatenate([[s.step_ms[0]], np.diff(s.end)]).astype(float)


def until_root(att: Attempt) -> StepArrays:
    """The steps the attempt began (its interval's start: the previous step's end) no later than its end's root
    event. Those it began after it trained on wrong numbers, or were skipped for them, until a guard stopped the
    job (silent data corruption's first non-finite number comes steps before the NaN check): their time is `hang`,
    root-cause event to attempt exit (DESIGN's ledger), neither work kept nor work thrown away."""
    s = att.steps
    began = np.concatenate([[s.end[0] - s.step_ms[0]], s.end[:-1]])
    return s.cut(max(1, int((began <= adversarial.truth_root_ms(att)).sum())))


def attempt_ms(att: Attempt, nxt: Attempt | None, b: float, data_base: float, alloc: bool = True,
               noise: float = 0.0) -> dict[str, float]:
    """One attempt's milliseconds by category (restart: up to the next attempt's start); `noise`: the run's
    step-time noise (`noise_ms`), within NOISE_SIGMAS of which a step that no straggler slowed is productive whole."""
    start, end = span_ms(att, alloc)
    s = until_root(att)
    interval = intervals_ms(s)
    save_in = np.concatenate([[0], s.save_after[:-1]]).astype(float)
    jitter = (noise > 0) & (s.slow < 0) & (np.abs(interval - b) <= NOISE_SIGMAS * noise)
    productive = np.where(jitter, interval, np.minimum(interval, b))
    excess = interval - productive
    ckpt = np.minimum(excess, save_in)
    rest = excess - ckpt
    data = np.minimum(rest, np.clip(s.data_ms - data_base, 0, None))
    rest = rest - data
    slow = s.slow >= 0
    keep = nxt.resumed_from if nxt is not None else (att.last_save() or 0)
    thrown = s.step > keep
    out = {c: 0.0 for c in CATEGORIES}
    out["productive"] = float(productive[~thrown].sum())
    # a thrown-away step's time is all recompute, whatever slowed it; only a completed save stays checkpoint
    out["recompute"] = float((productive + data + rest)[thrown].sum())
    out["checkpoint"] = float(ckpt.sum())
    out["data_stall"] = float(data[~thrown].sum())
    out["straggler"] = float(rest[slow & ~thrown].sum())
    out["slowdown"] = float(rest[~slow & ~thrown].sum())
    out["startup"] = float(s.end[0] - s.step_ms[0] - start)
    tail = float(end - s.end[-1])
    last_save = next((sv for sv in att.saves if sv.step == int(s.step[-1]) and sv.complete), None)
    tail_ckpt = min(tail, float(last_save.end_ms - last_save.start_ms)) if last_save else 0.0
    out["checkpoint"] += tail_ckpt
    # the work the root event cut short (the step in flight, or a save that never finished) was thrown away:
    # `recompute`; hang runs from the root (DESIGN's ledger). A hang with no deeper cause has no moment of its own:
    # its root is the last step every rank finished (the outsiders' campaign2), nothing after it work
    cut_short = float(adversarial.truth_root_ms(att) - s.end[-1]) - tail_ckpt
    hang = adversarial.truth_mode(att.ending) == "nccl_timeout"
    partial = 0.0 if hang else min(max(cut_short, 0.0), tail - tail_ckpt)
    out["recompute"] += partial
    out["hang"] = tail - tail_ckpt - partial
    out["restart"] = float(span_ms(nxt, alloc)[0] - end) if nxt is not None else 0.0
    return out


def ledger(run: Run, alloc: bool = True) -> dict:
    """The run's expected ledger: GPU-hours per category, the baseline, and the total."""
    b, data_base = baseline_ms(run)
    noise = noise_ms(run)
    total_ms = {c: 0.0 for c in CATEGORIES}
    for att, nxt in zip(run.attempts, [*run.attempts[1:], None], strict=True):
        for c, v in attempt_ms(att, nxt, b, data_base, alloc, noise).items():
            total_ms[c] += v
    wall_ms = span_ms(run.attempts[-1], alloc)[1] - span_ms(run.attempts[0], alloc)[0]
    to_h = run.gpus / 3_600_000
    return {
        "gpus": run.gpus, "wall_hours": wall_ms / 3_600_000, "gpu_hours": wall_ms * to_h,
        "baseline_step_s": b / 1000, "baseline_data_s": data_base / 1000,
        "ledger": {c: total_ms[c] * to_h for c in CATEGORIES},
    }
