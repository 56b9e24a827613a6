"""One attempt's training steps as arrays in integer milliseconds: jitter, saves and episodes.

A synchronous data-parallel step: every rank computes, waits for data, then waits in the
all-reduce for the slowest rank. The slowest rank's compute sets the step time:
`step = compute × factor + data + comm`, where `factor` is a throttling host's slowdown. All
times are integers (ms) so that what the logs print is exactly what the truth is computed from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepModel:
    """A run's steady step, in ms: compute of the slowest rank, data wait, communication."""

    compute_ms: int
    data_ms: int
    comm_ms: int
    jitter: float = 0.004  # relative noise of a step's compute
    warmup: float = 2.2  # the first step of a launch (allocator, NCCL buffers, kernels warming up)

    @property
    def step_ms(self) -> int:
        """The steady step time."""
        return self.compute_ms + self.data_ms + self.comm_ms


@dataclass
class StepArrays:
    """Per step of one attempt (all arrays the same length, in order)."""

    step: np.ndarray  # step numbers
    end: np.ndarray  # end of the step, epoch ms
    step_ms: np.ndarray
    compute_ms: np.ndarray  # the slowest healthy rank's compute (before a slow host's factor)
    data_ms: np.ndarray
    slow: np.ndarray  # index of the slow host in the attempt's hosts, -1 for none
    factor: np.ndarray  # the slow host's compute factor (1.0 for none)
    save_after: np.ndarray  # ms of the save that ran right after this step (0: none)

    def __len__(self) -> int:
        return len(self.step)

    def cut(self, n: int) -> StepArrays:
        """The first `n` steps."""
        return StepArrays(*(getattr(self, f)[:n] for f in self.__dataclass_fields__))


@dataclass(frozen=True)
class Episode:
    """Something that slows a stretch of steps: `kind` straggler | slowdown | data_stall."""

    kind: str
    at_ms: int  # the first affected step is the first that starts at or after this time
    steps: int
    value: float  # compute factor (straggler, slowdown) or extra data wait in ms (data_stall)
    host_pick: float  # in [0, 1): which of the attempt's hosts (stragglers)


def draw(model: StepModel, first_step: int, n: int, rng: np.random.Generator) -> StepArrays:
    """`n` steps with jitter (the first one warming up) and no saves or episodes yet."""
    compute = np.rint(model.compute_ms * (1 + rng.normal(0.0, model.jitter, n))).astype(np.int64)
    compute[0] = int(round(compute[0] * model.warmup))
    data = np.full(n, model.data_ms, dtype=np.int64)
    return StepArrays(
        step=np.arange(first_step, first_step + n, dtype=np.int64), end=np.zeros(n, dtype=np.int64),
        step_ms=compute + data + model.comm_ms, compute_ms=compute, data_ms=data,
        slow=np.full(n, -1, dtype=np.int64), factor=np.ones(n), save_after=np.zeros(n, dtype=np.int64))


def restamp(s: StepArrays, model: StepModel, first_start_ms: int) -> None:
    """Recompute step times and ends from compute, factors, data waits and saves."""
    slow_part = np.rint(s.compute_ms * s.factor).astype(np.int64)
    s.step_ms = slow_part + s.data_ms + model.comm_ms
    before = np.concatenate([[0], s.save_after[:-1]])
    s.end = first_start_ms + np.cumsum(s.step_ms + before)


def apply(s: StepArrays, ep: Episode, model: StepModel, first_start_ms: int, n_hosts: int) -> tuple[int, int] | None:
    """Apply an episode; returns the index range it covered, None where it falls outside or is cut short."""
    starts = s.end - s.step_ms
    i = int(np.searchsorted(starts, ep.at_ms, side="left"))
    j = min(len(s), i + ep.steps)
    # a straggler shorter than this is noise to any detector; never start one on a warm-up step
    if i == 0 or j - i < (20 if ep.kind == "straggler" else 1):
        return None
    if ep.kind == "straggler":
        if (s.slow[i:j] >= 0).any():
            return None
        s.slow[i:j] = min(int(ep.host_pick * n_hosts), n_hosts - 1)
        s.factor[i:j] = ep.value
    elif ep.kind == "slowdown":
        s.compute_ms[i:j] = np.rint(s.compute_ms[i:j] * ep.value).astype(np.int64)
    else:
        s.data_ms[i:j] += int(round(ep.value))
    restamp(s, model, first_start_ms)
    return i, j


def add_saves(s: StepArrays, save_every: int, durations: np.ndarray) -> None:
    """Saves after every `save_every`-th step, with the given durations (one per save slot)."""
    idx = np.nonzero(s.step % save_every == 0)[0]
    s.save_after[:] = 0
    s.save_after[idx] = durations[: len(idx)]
