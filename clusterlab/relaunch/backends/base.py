"""The one small interface every relaunch backend implements, and the data it is given."""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

# What a relaunched job is told about the checkpoint to resume from (the example script reads these).
RESUME_FROM = "CLUSTERLAB_RESUME_FROM"
RESUME_STEP = "CLUSTERLAB_RESUME_STEP"

# Scheduler-neutral job states a backend reports.
PENDING, RUNNING, COMPLETED, FAILED, UNKNOWN = "PENDING", "RUNNING", "COMPLETED", "FAILED", "UNKNOWN"


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a backend needs to build and run the relaunch (all hosts and paths already checked)."""

    run: str
    launch_command: list[str]  # run.toml's launch_command, split like a shell would but never run by one
    exclude: list[str]  # hosts the new job must not use
    resume_path: str | None
    resume_step: int | None
    nodes: int | None  # nodes the job needs
    healthy_hosts: list[str] = field(default_factory=list)  # inventory hosts not excluded, for rendezvous
    previous_job: str | None = None  # the scheduler job of the last attempt, where known


class SchedulerUnavailable(RuntimeError):
    """The scheduler could not be asked (its client failed or is missing); the message holds what it printed."""


@dataclass(frozen=True)
class SchedulerNodes:
    """The nodes the scheduler lists: whether each can take work now, its partitions, and the default partition."""

    up: dict[str, bool]
    partitions: dict[str, frozenset[str]] = field(default_factory=dict)
    default_partition: str | None = None

    def job_partitions(self, requested: set[str] | None) -> set[str] | None:
        """The partitions a job runs in: those it asks for, else the default one (None: any, unknown)."""
        return requested or ({self.default_partition} if self.default_partition else None)

    def refusal(self, host: str, requested: set[str] | None) -> str | None:
        """Why `host` must not reach a command for a job of `requested` partitions (None: it may)."""
        if host not in self.up:
            return "not a node the scheduler lists"
        parts = self.job_partitions(requested)
        if parts and not parts & self.partitions.get(host, frozenset()):
            return f"not a node of partition {','.join(sorted(parts))}"
        return None


@dataclass
class Launch:
    """What a backend's launch did: the job it started (or kept) and every command it ran."""

    job_id: str | None
    commands: list[dict] = field(default_factory=list)  # {"argv", "returncode", "output"}
    error: str | None = None
    note: str | None = None


def run_argv(argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run one command as an argument list (never through a shell) and capture what it prints."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"a command is a non-empty list of strings, not {argv!r}")
    return subprocess.run(argv, shell=False, capture_output=True, text=True, timeout=timeout, check=False)


Runner = Callable[[list[str]], subprocess.CompletedProcess]


def record(runner: Runner, argv: list[str], log: list[dict]) -> subprocess.CompletedProcess:
    """Run `argv` with `runner` and append what happened to `log`; a missing program is a failed run."""
    try:
        res = runner(argv)
    except (OSError, subprocess.TimeoutExpired) as e:
        res = subprocess.CompletedProcess(argv, 127, "", f"{type(e).__name__}: {e}")
    out = ((res.stdout or "") + (res.stderr or "")).strip()
    log.append({"argv": list(argv), "returncode": res.returncode, "output": out[-2000:]})
    return res


class Backend(ABC):
    """Builds the relaunch command, drains hosts, launches, and reports a job's state."""

    name: str

    @abstractmethod
    def command(self, spec: LaunchSpec) -> list[str]:
        """The launch command for `spec`, as an argument list ([] when it cannot be built)."""

    def drain_command(self, host: str, reason: str) -> list[str] | None:
        """The command that takes `host` out of service (None: this backend has no scheduler)."""
        return None

    @abstractmethod
    def launch(self, spec: LaunchSpec, runner: Runner) -> Launch:
        """Start the relaunched job; its id, or the error."""

    @abstractmethod
    def state(self, job_id: str, runner: Runner) -> str:
        """PENDING, RUNNING, COMPLETED, FAILED or UNKNOWN."""

    def scheduler_nodes(self, runner: Runner) -> SchedulerNodes | None:
        """The nodes the scheduler lists (None: this backend has no scheduler); SchedulerUnavailable if it can't."""
        return None

    def job_partitions(self, spec: LaunchSpec) -> set[str] | None:
        """The partitions the relaunched job asks for (None: not given, or no such thing for this backend)."""
        return None

    def node_states(self, runner: Runner) -> dict[str, bool] | None:
        """Every node the scheduler knows, and whether it can take work now (None: this backend can't tell)."""
        nodes = self.scheduler_nodes(runner)
        return None if nodes is None else nodes.up
