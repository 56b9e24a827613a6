"""A simulated run as the timeline plans it: its attempts, their saves and stragglers, and how each ended.

Plain records, below `timeline` (which fills them) and `adversarial` (which shapes some of their endings).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterlab.simulator.fleet import Cluster
from clusterlab.simulator.steps import StepArrays, StepModel


@dataclass
class Save:
    step: int
    start_ms: int
    end_ms: int
    complete: bool
    stall_host: str | None = None  # the host whose filesystem client reported the stall
    deleted: bool = False  # removed by the provider after it was written


@dataclass
class Ending:
    mode: str
    host: str | None  # where the cause is; None where no single host is to blame
    rank: int | None  # the rank that failed or hung first
    root_ms: int
    trigger_ms: int
    exit_ms: int
    kill: str | None = None  # the scheduler's verdict where it ended a job already dying of `mode` (hang → limit)
    server: str | None = None  # the storage server a filesystem fault came from (host is then the server)
    case: str | None = None  # the issue-29 case this ending plants (adversarial.CASES), if any


@dataclass
class Straggler:
    host: str
    first_step: int
    last_step: int
    start_ms: int  # end of the step before the first slow one
    end_ms: int  # end of the last slow one
    factor: float


@dataclass
class Attempt:
    run: str
    k: int
    hosts: tuple[str, ...]
    start_ms: int
    startup_ms: int
    load_ms: int  # part of the start-up spent loading the checkpoint (0 for a fresh start)
    resumed_from: int  # the checkpoint step loaded (0: none)
    steps: StepArrays
    saves: list[Save]
    ending: Ending
    stragglers: list[Straggler] = field(default_factory=list)
    slowdowns: list[tuple[str, int, int, float]] = field(default_factory=list)  # (kind, first, last, value)
    job_id: str = ""
    # per-rank timings written: step indices [lo, hi) and the attempt's host indices (None: all of them)
    coverage: tuple[int, int, tuple[int, ...]] | None = None

    @property
    def end_ms(self) -> int:
        """The attempt's last stamped log line."""
        return self.ending.exit_ms

    @property
    def first_step(self) -> int:
        """The first step this attempt trained."""
        return int(self.steps.step[0])

    @property
    def last_step(self) -> int:
        """The last step it completed."""
        return int(self.steps.step[-1])

    def last_save(self) -> int | None:
        """The step of its last completed save, if any."""
        done = [s.step for s in self.saves if s.complete]
        return done[-1] if done else None


@dataclass
class Run:
    name: str
    cluster: Cluster
    model: StepModel
    save_every: int
    tokens_per_step: int
    shape: tuple[str, int, int, int]  # MODELS entry
    attempts: list[Attempt] = field(default_factory=list)
    repairs: list[tuple[str, int, int]] = field(default_factory=list)  # (host, drained at, back in service at)
    stall_pending: bool = False  # the scenario's stalled save is still to come
    normal_saves: int = 0  # completed saves that did not stall, so far
    log_every: int = 10  # Megatron's --log-interval
    # one iteration line in this many carries its time: Megatron-DeepSpeed prints its iteration line without one
    # (a stamped DeepSpeed line comes every steps_per_print); 1: Megatron-LM, every line stamped
    stamp_every: int = 1
    limit_ms: int | None = None  # each job's Slurm time limit (sbatch --time); None: only the window's end
    hang_ms: int | None = None  # a hang detector's timeout (Config.hang_timeout_s); None: the NCCL watchdog's

    @property
    def gpus(self) -> int:
        """GPUs the run holds (every attempt the same)."""
        return self.cluster.run_nodes * self.cluster.gpus_per_node
