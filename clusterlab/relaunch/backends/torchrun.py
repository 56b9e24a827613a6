"""torchrun: a local or rendezvous launch of the run's own torchrun command, told which checkpoint to resume."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from clusterlab.relaunch.backends.base import (
    COMPLETED,
    FAILED,
    RESUME_FROM,
    RESUME_STEP,
    RUNNING,
    UNKNOWN,
    Backend,
    Launch,
    LaunchSpec,
    Runner,
)

_ENDPOINT_OPTS = ("--rdzv-endpoint", "--rdzv_endpoint")
_MASTER_OPTS = ("--master-addr", "--master_addr")


def _is_torchrun(argv: list[str]) -> bool:
    name = os.path.basename(argv[0]) if argv else ""
    return name == "torchrun" or (name.startswith("python") and argv[1:3] == ["-m", "torch.distributed.run"])


def _moved(value: str, is_endpoint: bool, exclude: set[str], healthy: list[str]) -> str:
    """A rendezvous host:port (or master address) moved off an excluded host onto a healthy one."""
    host, sep, port = value.rpartition(":") if is_endpoint and ":" in value else (value, "", "")
    if host in exclude and healthy:
        return f"{healthy[0]}{sep}{port}"
    return value


class TorchrunBackend(Backend):
    """Starts torchrun in its own session, its output in a log file; the job id is its process id."""

    name = "torchrun"

    def __init__(self, log_dir: str | os.PathLike | None = None) -> None:
        self.log_dir = Path(log_dir) if log_dir else None
        self._procs: dict[str, subprocess.Popen] = {}

    def command(self, spec: LaunchSpec) -> list[str]:
        """`env CLUSTERLAB_RESUME_FROM=... torchrun ...`, the rendezvous moved off excluded hosts."""
        argv = list(spec.launch_command)
        if not _is_torchrun(argv):
            return []
        exclude = set(spec.exclude)
        for i, a in enumerate(argv):
            name, eq, val = a.partition("=")
            if name in _ENDPOINT_OPTS + _MASTER_OPTS:
                endpoint = name in _ENDPOINT_OPTS
                if eq:
                    argv[i] = f"{name}={_moved(val, endpoint, exclude, spec.healthy_hosts)}"
                elif i + 1 < len(argv):
                    argv[i + 1] = _moved(argv[i + 1], endpoint, exclude, spec.healthy_hosts)
        if spec.resume_path:
            argv = ["env", f"{RESUME_FROM}={spec.resume_path}", f"{RESUME_STEP}={spec.resume_step}", *argv]
        return argv

    def launch(self, spec: LaunchSpec, runner: Runner) -> Launch:
        """Start the command detached (it outlives this process); stdout and stderr go to a log file."""
        argv = self.command(spec)
        if not argv:
            return Launch(None, [], error="run.toml's launch_command is not a torchrun command")
        log_dir = self.log_dir or Path(tempfile.mkdtemp(prefix="clusterlab-relaunch-"))
        log_dir.mkdir(parents=True, exist_ok=True)
        out = log_dir / f"{spec.run}.torchrun.log"
        try:
            with open(out, "ab") as fh:
                proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, shell=False)
        except OSError as e:
            return Launch(None, [{"argv": argv, "returncode": 127, "output": str(e)}], error=f"torchrun: {e}")
        self._procs[str(proc.pid)] = proc
        return Launch(str(proc.pid), [{"argv": argv, "returncode": None, "output": f"log: {out}"}],
                      note=f"torchrun output in {out}")

    def state(self, job_id: str, runner: Runner) -> str:
        """RUNNING while the process lives; COMPLETED or FAILED by its exit status when we started it."""
        proc = self._procs.get(job_id)
        if proc is not None:
            code = proc.poll()
            return RUNNING if code is None else COMPLETED if code == 0 else FAILED
        return RUNNING if Path(f"/proc/{job_id}").exists() else UNKNOWN
