"""Slurm: drain with `scontrol update`, resubmit with `sbatch --exclude`, or requeue a job still allocated."""

from __future__ import annotations

import os
import re

from clusterlab import hostlist
from clusterlab.relaunch.backends.base import (
    COMPLETED,
    FAILED,
    PENDING,
    RESUME_FROM,
    RESUME_STEP,
    RUNNING,
    UNKNOWN,
    Backend,
    Launch,
    LaunchSpec,
    Runner,
    SchedulerNodes,
    SchedulerUnavailable,
    record,
)

# sbatch short options that take a value (`-N 4`, `-N4`); the others are flags.
_SHORT_VALUE = set("AaBbCcDdeGiJLMmNnopqStwx")
# long options that are flags, or whose value may only be given with `=`
_LONG_FLAG = {"--parsable", "--hold", "--requeue", "--no-requeue", "--test-only", "--wait", "--contiguous",
              "--overcommit", "--spread-job", "--usage", "--help", "--verbose", "--quiet", "--use-min-nodes",
              "--reboot", "--ignore-pbs", "--oversubscribe", "--exclusive", "--no-kill", "--nice", "--propagate",
              "--get-user-env", "--immediate", "--version", "--kill-on-invalid-dep"}
_JOB_ID = re.compile(r"\d+(?:_\d+)?")
_ALLOCATED = {"RUNNING", "CONFIGURING", "SUSPENDED", "STOPPED"}
_UP = {"idle", "mix", "alloc", "comp", "plnd"}  # sinfo's short node states that can take a job
_STATES = {"PENDING": PENDING, "CONFIGURING": PENDING, "REQUEUED": PENDING, "REQUEUE_HOLD": PENDING,
           "REQUEUE_FED": PENDING, "RESV_DEL_HOLD": PENDING, "RUNNING": RUNNING, "COMPLETING": RUNNING,
           "SUSPENDED": RUNNING, "STOPPED": RUNNING, "COMPLETED": COMPLETED}


def split_options(argv: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """sbatch's options as (name, value) pairs, and the rest: the script and its arguments."""
    opts: list[tuple[str, str | None]] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if eq:
                opts.append((name, val))
            elif name in _LONG_FLAG or i + 1 >= len(argv):
                opts.append((name, None))
            else:
                opts.append((name, argv[i + 1]))
                i += 1
        elif len(a) == 2 and a[1] in _SHORT_VALUE and i + 1 < len(argv):
            opts.append((a, argv[i + 1]))
            i += 1
        elif a[1] in _SHORT_VALUE:
            opts.append((a[:2], a[2:].lstrip("=")))
        else:
            opts.append((a, None))
        i += 1
    return opts, argv[i:]


class SlurmBackend(Backend):
    """sbatch / scontrol / squeue, run as argument lists."""

    name = "slurm"

    def command(self, spec: LaunchSpec) -> list[str]:
        """The run's own sbatch command with --parsable, --exclude and the resume checkpoint exported."""
        argv = spec.launch_command
        if not argv or os.path.basename(argv[0]) != "sbatch":
            return []
        opts, rest = split_options(argv)
        exclude = set(spec.exclude)
        export = None
        kept: list[str] = []
        for name, val in opts:
            if name in ("--exclude", "-x") and val:
                exclude.update(hostlist.expand(val))
            elif name == "--export":
                export = val
            elif name != "--parsable":
                kept.append(name if val is None else f"{name}={val}" if name.startswith("--") else f"{name}{val}")
        ours = ["--parsable"]
        if exclude:
            ours.append(f"--exclude={hostlist.compress(sorted(exclude))}")
        env = [f"{RESUME_FROM}={spec.resume_path}", f"{RESUME_STEP}={spec.resume_step}"] if spec.resume_path else []
        if env or export:
            base = "ALL" if export is None else export
            ours.append("--export=" + ",".join([*([] if base.upper() == "NONE" and env else [base]), *env]))
        return [argv[0], *ours, *kept, *rest]

    def drain_command(self, host: str, reason: str) -> list[str]:
        """`scontrol update nodename=H state=drain reason=...` (one argument each: no quoting needed)."""
        return ["scontrol", "update", f"nodename={host}", "state=drain", f"reason={reason}"]

    def launch(self, spec: LaunchSpec, runner: Runner) -> Launch:
        """Requeue the previous job if it still holds its nodes (with the hosts excluded), else sbatch."""
        log: list[dict] = []
        prev = spec.previous_job
        if prev and _JOB_ID.fullmatch(prev) and self._raw_state(prev, runner, log) in _ALLOCATED:
            res = record(runner, ["scontrol", "requeue", prev], log)
            if res.returncode:
                return Launch(None, log, error=f"scontrol requeue {prev} failed: {log[-1]['output']}")
            if spec.exclude:
                record(runner, ["scontrol", "update", f"jobid={prev}",
                                f"excnodelist={hostlist.compress(spec.exclude)}"], log)
            return Launch(prev, log, note="requeued the job that still held its nodes; it resumes from the newest "
                                          "checkpoint it finds (its environment was fixed at submission)")
        argv = self.command(spec)
        if not argv:
            return Launch(None, log, error="run.toml's launch_command is not an sbatch command")
        res = record(runner, argv, log)
        job = (res.stdout or "").strip().split(";")[0]
        if res.returncode or not _JOB_ID.fullmatch(job):
            return Launch(None, log, error=f"sbatch failed: {log[-1]['output'] or 'no job id printed'}")
        return Launch(job, log)

    def state(self, job_id: str, runner: Runner) -> str:
        """The job's state, from squeue (which keeps finished jobs for MinJobAge) or scontrol."""
        raw = self._raw_state(job_id, runner, [])
        if raw is None:
            return UNKNOWN
        return _STATES.get(raw, FAILED)

    def scheduler_nodes(self, runner: Runner) -> SchedulerNodes:
        """The nodes of `sinfo -N` (a line per node and partition, `main*` the default); SchedulerUnavailable."""
        # NOTE: up = idle, mixed, allocated or completing, and responding (`*` is not responding; `~` powered
        # down but resumable and `#` powering up count as up).
        log: list[dict] = []
        res = record(runner, ["sinfo", "-h", "-N", "-o", "%N %t %P"], log)
        if res.returncode:
            said = " ".join(log[-1]["output"].split())[-500:] or "no output"
            raise SchedulerUnavailable(f"sinfo failed (exit {res.returncode}): {said}")
        up: dict[str, bool] = {}
        parts: dict[str, set[str]] = {}
        default = None
        for line in (res.stdout or "").splitlines():
            fields = line.split()
            if len(fields) not in (2, 3):
                continue
            node, state, *partition = fields
            base = state.rstrip("*~#%!$@^-")
            up[node] = up.get(node, False) or (base in _UP and not set(state) & set("*%!"))
            for p in partition:
                default = p.rstrip("*") if p.endswith("*") else default
                parts.setdefault(node, set()).add(p.rstrip("*"))
        return SchedulerNodes(up, {n: frozenset(p) for n, p in parts.items()}, default)

    def job_partitions(self, spec: LaunchSpec) -> set[str] | None:
        """The partitions of the run's sbatch command (`-p gpu`, `--partition=a,b`), if it names any."""
        opts, _ = split_options(spec.launch_command) if spec.launch_command else ([], [])
        named = {p for name, val in opts if name in ("-p", "--partition") and val for p in val.split(",") if p}
        return named or None

    def _raw_state(self, job_id: str, runner: Runner, log: list[dict]) -> str | None:
        res = record(runner, ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"], log)
        out = (res.stdout or "").split()
        if res.returncode == 0 and out:
            return out[0]
        res = record(runner, ["scontrol", "show", "job", job_id], log)
        m = re.search(r"JobState=(\w+)", res.stdout or "")
        return m.group(1) if m else None
