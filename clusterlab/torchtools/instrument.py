"""Per-rank step records from inside a training loop: the JSONL of DESIGN.md's "Per-rank step record".

    rec = StepRecorder(out_dir / "steps" / f"rank-{rank}.jsonl")
    for step in range(start, steps + 1):
        with rec.step(step) as s:
            with s.data():
                batch = next(it)
            with s.compute():
                loss = train_step(batch)
            with s.comm():
                dist.all_reduce(mean_loss)
            s.tokens, s.loss = batch.numel(), loss      # a tensor is fine: read later, not synced now
    rec.close()

Each record: `ts` (ISO 8601 UTC, end of step), `rank`, `host`, `step`, `step_s`, and where measured
`compute_s`, `comm_s`, `data_s`, `tokens`, `loss` (`loss_nonfinite: true` where it was NaN or inf: pass this
rank's own loss, not an all-reduced one, so that one rank's non-finite loss can be told from everyone's).
Without an explicit `compute()` region,
`compute_s` is the step less its data and comm regions (written only when one of those was marked).

On CUDA every region is a pair of CUDA events recorded on the current stream: the hot path only
enqueues them, and a step's record is written once its events have completed, `lag` or more steps
later (`Event.query()`, never a synchronisation, unless more than `max_pending` steps are waiting).
Regions then measure GPU time: `data_s` is how long the GPU waited for the host's data, `comm_s`
how long the stream waited for its collectives. On CPU the clocks are `time.perf_counter()`.

Crash safety: each record is one `os.write` of a whole line to an `O_APPEND` descriptor as soon as
it is resolved, so a process that is killed (even SIGKILL) leaves every written step complete and
readable; the kernel holds the bytes, no flush is needed. On CUDA the last `lag` steps may still be
in flight on the GPU when the process dies, and are not written. A node that loses power may lose
what the page cache held; pass `fsync=True` to trade time for that.

Stalls: a step still open `stall_after(s)` after it began (`STALL_STEPS` x the median of the rank's recent steps,
and at least `stall_min_s`) gets one record of its own while it is open: `ts`, `rank`, `host`, `step`, `stalled_s`
(how long it had been open) and `region` (the region open then, if any), written by a watcher thread. In a hang
the ranks that began the next step and wait in its collective write one; the rank that never began it (stuck
between steps, or dead) writes none: who stopped first, which the last finished step of every rank cannot say
(`clusterlab.diagnose.stopped_first`, `clusterlab watch`). `stall_min_s=None` turns it off.

`$CLUSTERLAB_HOST` overrides the host written (a template: `node{rank}`, `{host}-{local_rank}`): for
emulating several nodes on one machine (tests, the CPU demo); real runs leave it unset.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import json
import os
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

REGIONS = ("data", "compute", "comm")
STALL_STEPS = 10.0  # a step open this many times the rank's usual step is stalled (see the module's "Stalls")


class Clock(Protocol):
    """Marks points in time and measures between them, possibly only once they have happened."""

    def mark(self) -> Any: ...
    def ready(self, mark: Any) -> bool: ...
    def wait(self, mark: Any) -> None: ...
    def seconds(self, start: Any, end: Any) -> float: ...
    def wall(self, mark: Any) -> float: ...  # epoch seconds of a ready mark


class WallClock:
    """CPU (and gloo) timing: marks are `perf_counter()` readings, ready at once."""

    def __init__(self) -> None:
        self._offset = time.time() - time.perf_counter()

    def mark(self) -> float:
        return time.perf_counter()

    def ready(self, mark: float) -> bool:
        return True

    def wait(self, mark: float) -> None:
        pass

    def seconds(self, start: float, end: float) -> float:
        return end - start

    def wall(self, mark: float) -> float:
        return self._offset + mark


class CudaClock:
    """GPU timing: marks are CUDA events on the current stream, read once they have completed."""

    def __init__(self, device: torch.device | None = None) -> None:
        self.device = device
        self._free: list[torch.cuda.Event] = []
        # NOTE: one synchronisation, here and never again: it ties GPU time to the wall clock, so a
        # step's end on the GPU gets an epoch time from its event's distance to this anchor.
        self._anchor = torch.cuda.Event(enable_timing=True)
        self._anchor.record()
        self._anchor.synchronize()
        self._anchor_wall = time.time()

    def mark(self) -> torch.cuda.Event:
        ev = self._free.pop() if self._free else torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def ready(self, mark: torch.cuda.Event) -> bool:
        return mark.query()

    def wait(self, mark: torch.cuda.Event) -> None:
        mark.synchronize()

    def seconds(self, start: torch.cuda.Event, end: torch.cuda.Event) -> float:
        return start.elapsed_time(end) / 1000.0

    def wall(self, mark: torch.cuda.Event) -> float:
        return self._anchor_wall + self._anchor.elapsed_time(mark) / 1000.0

    def release(self, marks: list[torch.cuda.Event]) -> None:
        """Events of a written step go back to the pool (recording again reuses them)."""
        self._free.extend(marks)


@dataclass
class Step:
    """One step being timed; regions are `with s.data():`, `with s.compute():`, `with s.comm():`."""

    step: int
    clock: Clock
    start: Any = None
    end: Any = None
    spans: dict[str, list[tuple[Any, Any]]] = field(default_factory=lambda: {r: [] for r in REGIONS})
    tokens: int | None = None
    loss: float | torch.Tensor | None = None
    _open: dict[str, Any] = field(default_factory=dict)
    _loss_copy: torch.Tensor | None = None  # pinned host copy of a CUDA loss, valid once `end` is ready

    @contextlib.contextmanager
    def region(self, kind: str) -> Iterator[None]:
        """Time the block as `kind` (data, compute or comm); a step may hold several of each."""
        self.begin(kind)
        try:
            yield
        finally:
            self.finish(kind)

    def data(self) -> contextlib.AbstractContextManager[None]:
        return self.region("data")

    def compute(self) -> contextlib.AbstractContextManager[None]:
        return self.region("compute")

    def comm(self) -> contextlib.AbstractContextManager[None]:
        return self.region("comm")

    def begin(self, kind: str) -> None:
        """Open a region (for Megatron-style timers' start/stop); `finish(kind)` closes it."""
        if kind not in self.spans:
            raise ValueError(f"region {kind!r} is not one of {REGIONS}")
        if kind in self._open:
            raise RuntimeError(f"region {kind!r} is already open at step {self.step}")
        self._open[kind] = self.clock.mark()

    def finish(self, kind: str) -> None:
        self.spans[kind].append((self._open.pop(kind), self.clock.mark()))

    def marks(self) -> list[Any]:
        return [self.start, self.end, *(m for spans in self.spans.values() for pair in spans for m in pair)]


def default_host(rank: int, local_rank: int) -> str:
    """$CLUSTERLAB_HOST (a template, for emulated nodes), else $SLURMD_NODENAME, else the hostname."""
    real = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    template = os.environ.get("CLUSTERLAB_HOST")
    return template.format(rank=rank, local_rank=local_rank, host=real) if template else real


def default_rank() -> int:
    """This process's global rank: the process group's, else torchrun's $RANK, else 0."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def _loss_value(loss: Any) -> float | None:
    if loss is None:
        return None
    value = float(loss.item() if isinstance(loss, torch.Tensor) else loss)
    return value if value == value and abs(value) != float("inf") else None  # JSON has no NaN: leave it out


class StepRecorder:
    """Writes one step record per completed step to an append-only JSONL file (one per rank)."""

    def __init__(self, path: str | os.PathLike, rank: int | None = None, host: str | None = None,
                 device: torch.device | str | None = None, clock: Clock | None = None, lag: int = 2,
                 max_pending: int = 64, fsync: bool = False, stall_min_s: float | None = 10.0) -> None:
        self.path = Path(path)
        self.rank = default_rank() if rank is None else rank
        self.host = host or default_host(self.rank, int(os.environ.get("LOCAL_RANK", "0")))
        dev = torch.device(device) if device is not None else None
        if clock is None:
            clock = CudaClock(dev) if dev is not None and dev.type == "cuda" else WallClock()
        self.clock = clock
        self.lag, self.max_pending, self.fsync = lag, max_pending, fsync
        self._pending: collections.deque[Step] = collections.deque()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.written = 0
        # the step open now (host wall time of its begin) and the host-side durations of the last steps
        self._open: tuple[Step, float] | None = None
        self._recent: collections.deque[float] = collections.deque(maxlen=20)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.stall_min_s = stall_min_s
        self._watcher: threading.Thread | None = None
        if stall_min_s is not None:
            self._watcher = threading.Thread(target=self._watch_stalls, name="clusterlab-stall-watch", daemon=True)
            self._watcher.start()

    @contextlib.contextmanager
    def step(self, step: int) -> Iterator[Step]:
        """Time one training step; its record is written when it can be read without waiting."""
        s = self.begin(step)
        yield s
        # NOTE: a step that raised is not a completed step: it is not written.
        self.end(s)

    def begin(self, step: int) -> Step:
        """Start timing `step` (the hook form of `step()`); pass the result to `end()`."""
        s = Step(step, self.clock)
        s.start = self.clock.mark()
        self._open = (s, time.time())
        return s

    def end(self, s: Step) -> None:
        """Close `s` and write every earlier step that is ready."""
        for kind in list(s._open):
            s.finish(kind)
        if isinstance(s.loss, torch.Tensor) and s.loss.device.type == "cuda":
            # NOTE: the copy is queued before the end event on the same stream: once that event is
            # done, so is the copy, and reading the loss later needs no synchronisation.
            s._loss_copy = torch.empty((), dtype=torch.float32, pin_memory=True)
            s._loss_copy.copy_(s.loss.detach().reshape(()), non_blocking=True)
        s.end = self.clock.mark()
        opened = self._open
        if opened is not None and opened[0] is s:
            self._open = None
            self._recent.append(time.time() - opened[1])
        self._pending.append(s)
        self._drain(keep=self.lag)

    def _drain(self, keep: int) -> None:
        """Write pending steps, oldest first, leaving the newest `keep` unless they are ready."""
        while self._pending:
            oldest = self._pending[0]
            waiting = len(self._pending)
            if waiting <= keep and not self.clock.ready(oldest.end):
                return
            if not self.clock.ready(oldest.end):
                if waiting <= self.max_pending:
                    return
                self.clock.wait(oldest.end)  # bounded memory: far behind, wait for the oldest step
            self._pending.popleft()
            self._write(self.record(oldest))
            if isinstance(self.clock, CudaClock):
                self.clock.release(oldest.marks())

    def record(self, s: Step) -> dict[str, Any]:
        """The step record of a completed step (its end mark is ready)."""
        c = self.clock
        step_s = c.seconds(s.start, s.end)
        totals = {k: sum(c.seconds(a, b) for a, b in spans) for k, spans in s.spans.items() if spans}
        if "compute" not in totals and totals:
            totals["compute"] = max(0.0, step_s - totals.get("data", 0.0) - totals.get("comm", 0.0))
        ts = dt.datetime.fromtimestamp(c.wall(s.end), dt.UTC).isoformat(timespec="microseconds")
        rec: dict[str, Any] = {"ts": ts, "rank": self.rank, "host": self.host, "step": s.step,
                               "step_s": round(step_s, 6)}
        for k in REGIONS:
            if k in totals:
                rec[f"{k}_s"] = round(totals[k], 6)
        if s.tokens is not None:
            rec["tokens"] = int(s.tokens)
        raw = s._loss_copy if s._loss_copy is not None else s.loss
        loss = _loss_value(raw)
        if loss is not None:
            rec["loss"] = loss
        elif raw is not None:  # NaN or inf, which JSON cannot hold: said, as its peers' finite losses are compared
            rec["loss_nonfinite"] = True
        return rec

    def stall_after_s(self) -> float:
        """How long a step may stay open before it is recorded as stalled."""
        usual = statistics.median(self._recent) if self._recent else 0.0
        return max(self.stall_min_s or 0.0, STALL_STEPS * usual)

    def _watch_stalls(self) -> None:
        """One record per stalled step, while it is open (a daemon thread: it never keeps the process alive)."""
        said: Step | None = None
        poll_s = min(1.0, max(0.05, (self.stall_min_s or 1.0) / 4))
        while not self._stop.wait(poll_s):
            opened = self._open
            if opened is None or opened[0] is said:
                continue
            s, began = opened
            open_s = time.time() - began
            if open_s < self.stall_after_s():
                continue
            region = next(iter(list(s._open)), None)  # (a copy: the training thread opens and closes regions)
            rec = {"ts": dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"), "rank": self.rank,
                   "host": self.host, "step": s.step, "stalled_s": round(open_s, 3)}
            if region is not None:
                rec["region"] = region
            try:
                self._write(rec, count=False)
            except (OSError, ValueError):  # closed meanwhile
                return
            said = s

    def _write(self, rec: dict[str, Any], count: bool = True) -> None:
        data = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        # NOTE: one write() per line on an O_APPEND descriptor: a kill between two records never
        # leaves half a line behind (short writes on regular files are looped over, not expected). The lock
        # keeps the stall watcher's line and a step's line whole when both write at once.
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path}: recorder is closed")
            while data:
                data = data[os.write(self._fd, data):]
            if self.fsync:
                os.fsync(self._fd)
        self.written += count

    def flush(self) -> None:
        """Write every pending step, waiting for the GPU where needed (not for the hot path)."""
        while self._pending:
            self.clock.wait(self._pending[-1].end)
            self._drain(keep=0)

    def close(self) -> None:
        """Flush and close the file (idempotent)."""
        if self._fd is None:
            return
        self._stop.set()
        self.flush()
        with self._lock:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StepRecorder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
