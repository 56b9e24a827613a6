"""A real Slurm cluster of N emulated nodes on this one machine, for the relaunch tests.

munged, one slurmctld and one `slurmd -N nodeK` per node, all on loopback with ports of their own
(chosen free at start, so another cluster on the machine does not collide). Configuration comes
from tests/slurm/*.conf.in. Everything started here is stopped by PID in `stop()`; a munged that
was already running is left alone. Needs root; installs Debian's slurm-wlm and munge when missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "slurm"
MUNGE_PID = Path("/run/munge/munged.pid")


class SlurmUnavailable(RuntimeError):
    """This machine cannot run the local cluster (not root, no packages and no way to install them)."""


def _free_ports(n: int) -> list[int]:
    """n distinct TCP ports that nothing listens on right now."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def ensure_installed() -> None:
    """Install slurm-wlm and munge from the distribution when they are missing (root only)."""
    if shutil.which("slurmctld") and shutil.which("slurmd") and shutil.which("munged"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SlurmUnavailable("slurm-wlm and munge are not installed and cannot be installed here")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "slurm-wlm", "munge"]):
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if res.returncode:
            raise SlurmUnavailable(f"{' '.join(cmd)} failed: {res.stderr.strip()[-500:]}")


@dataclass
class LocalSlurm:
    """A running local cluster: its files under `root`, its client environment in `env`."""

    root: Path
    nodes: int = 4
    pids: list[int] = field(default_factory=list)
    munged_pid: int | None = None

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment clients (sbatch, scontrol, squeue) need to find this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    @property
    def node_names(self) -> list[str]:
        return [f"node{i}" for i in range(1, self.nodes + 1)]

    def start(self, timeout: float = 60.0) -> LocalSlurm:
        """Write the configuration, start munged (if needed), slurmctld and the slurmds; wait until idle."""
        ensure_installed()
        if os.geteuid() != 0:
            raise SlurmUnavailable("the local cluster runs its daemons as root")
        self._write_config()
        self._start_munge()
        subprocess.run(["/usr/sbin/slurmctld", "-f", str(self.conf)], check=True, env=self.env, timeout=30)
        self.pids.append(self._read_pid("slurmctld.pid"))
        for name in self.node_names:
            subprocess.run(["/usr/sbin/slurmd", "-f", str(self.conf), "-N", name], check=True, env=self.env,
                           timeout=30)
            self.pids.append(self._read_pid(f"slurmd-{name}.pid"))
        self.wait_for(lambda: sorted(self.idle_nodes()) == sorted(self.node_names), timeout, "nodes to be idle")
        return self

    def _write_config(self) -> None:
        for sub in ("etc", "state", "run", "log", "dev", *(f"spool/{n}" for n in self.node_names)):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for g in range(4):  # gres/gpu insists on character devices; c 1 3 behaves like /dev/null
            dev = self.root / "dev" / f"gpu{g}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))
        ports = _free_ports(self.nodes + 1)
        nodes = "\n".join(
            f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs=4 RealMemory=4000 "
            f"Gres=gpu:4 State=UNKNOWN" for n, p in zip(self.node_names, ports[1:], strict=True))
        fill = {"@ROOT@": str(self.root), "@CONTROLLER@": socket.gethostname().split(".")[0],
                "@CTLD_PORT@": str(ports[0]), "@NODES@": nodes, "@NODELIST@": f"node[1-{self.nodes}]"}
        for name in ("slurm.conf", "gres.conf"):
            text = (TEMPLATES / f"{name}.in").read_text()
            for key, val in fill.items():
                text = text.replace(key, val)
            (self.root / "etc" / name).write_text(text)

    def _start_munge(self) -> None:
        """Start munged unless one already answers (then it belongs to someone else: leave it running)."""
        if _munge_ok():
            return
        for d in ("/run/munge", "/var/lib/munge", "/var/log/munge", "/etc/munge"):
            Path(d).mkdir(parents=True, exist_ok=True)
            shutil.chown(d, "munge", "munge")
        key = Path("/etc/munge/munge.key")
        if not key.exists():  # a fresh container may have lost the key the package created
            subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True, timeout=30)
        subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True, timeout=30)
        self.wait_for(_munge_ok, 10, "munged")
        self.munged_pid = int(MUNGE_PID.read_text().split()[0])

    def _read_pid(self, name: str) -> int:
        path = self.root / "run" / name
        # the daemon creates the file before it writes its pid into it
        text = self.wait_for(lambda: path.exists() and path.read_text().strip(), 10, f"{path}")
        return int(text.split()[0])

    def stop(self) -> None:
        """Cancel this cluster's jobs, then stop its daemons (and our munged) by PID."""
        if self.pids:
            self.run("scancel", "--full", "--user", "root", check=False)
            with contextlib.suppress(TimeoutError):
                self.wait_for(lambda: not self.run("squeue", "-h", "-o", "%i", check=False).strip(), 15, "jobs")
        _stop_pids(self.pids)  # all slurm daemons at once; munged last, they use it while stopping
        if self.munged_pid:
            _stop_pids([self.munged_pid])
        self.pids.clear()
        self.munged_pid = None

    def run(self, *argv: str, check: bool = True) -> str:
        """A Slurm client command against this cluster; its stdout."""
        res = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=30)
        if check and res.returncode:
            raise RuntimeError(f"{' '.join(argv)}: {res.stderr.strip()}")
        return res.stdout

    def idle_nodes(self) -> list[str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        return [ln.split()[0] for ln in out.splitlines() if ln.split()[1:] == ["idle"]]

    def node_state(self, node: str) -> str:
        """e.g. `idle`, `alloc`, `drain`, `drng` (sinfo's short state)."""
        return self.run("sinfo", "-h", "-n", node, "-o", "%t").strip()

    def job_state(self, job_id: str) -> str:
        """PENDING, RUNNING, COMPLETED, FAILED, ... (kept MinJobAge seconds after the end)."""
        return self.run("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T", check=False).strip() or "UNKNOWN"

    @staticmethod
    def wait_for(cond, timeout: float, what: str, every: float = 0.25):
        """Poll `cond()` until it is truthy (returned) or `timeout` seconds pass (TimeoutError)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = cond()
            if got:
                return got
            time.sleep(every)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def _munge_ok() -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5)
        return cred.returncode == 0 and subprocess.run(["unmunge"], input=cred.stdout, capture_output=True,
                                                       timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_pids(pids: list[int], timeout: float = 15.0) -> None:
    """SIGTERM these processes and wait for them to go (SIGKILL what is left after `timeout`)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)
    end = time.monotonic() + timeout
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
