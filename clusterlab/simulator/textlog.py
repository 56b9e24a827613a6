"""Text blocks that launchers and libraries print: NCCL init, c10d watchdog aborts, torchrun summaries.

Shared by the random fleet and the demo scenario (demo/). Every function takes its random source
(or a seed) explicitly, so the same arguments always give the same bytes.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass

from clusterlab.simulator.stamps import UTC, after, c10d_stamp, elastic_ts, glog


class Log:
    """Lines from many processes, each at its time; rendered in time order like a merged stream."""

    def __init__(self) -> None:
        self.items: list[tuple[dt.datetime, int, str]] = []

    def add(self, t: dt.datetime, text: str) -> None:
        """A line (or block) printed at `t`."""
        self.items.append((t, len(self.items), text))

    def render(self) -> str:
        """All lines in time order (ties in the order added)."""
        return "".join(text + "\n" for _, _, text in sorted(self.items))


@dataclass
class Proc:
    """One training process: where it runs and the ids NCCL prints."""

    rank: int
    host: str
    local: int
    pid: int
    tid: int  # NCCL's init thread
    proxy_tid: int  # NCCL's proxy progress thread
    bus: str

    def prefix(self, tid: int | None = None) -> str:
        """NCCL's `host:pid:tid [cudaDev]` line prefix."""
        return f"{self.host}:{self.pid}:{self.tid if tid is None else tid} [{self.local}]"


def nccl_init(log: Log, procs: list[Proc], t0: dt.datetime, r: random.Random, *, ip_of: Callable[[str], str],
              version: str, nch: int = 16, group: list[int] | None = None) -> None:
    """The lines every rank prints while a communicator initialises, ending in Init COMPLETE."""
    members = [procs[i] for i in (group if group is not None else range(len(procs)))]
    nranks, nnodes = len(members), len({p.host for p in members})
    comm_id = f"0x{r.getrandbits(64):016x}"
    first_comm = group is None
    for i, p in enumerate(members):
        t = after(t0, r.uniform(0, 0.4))
        comm = f"0x{0x55d000000000 + r.getrandbits(36):x}"

        def line(text: str, dt_s: float = 0.003, tid: int | None = None, _p: Proc = p) -> None:
            nonlocal t
            t = after(t, dt_s * r.uniform(0.5, 1.5))
            log.add(t, f"{_p.prefix(tid)} NCCL INFO {text}")

        if first_comm:
            ip = ip_of(p.host)
            line(f"Bootstrap : Using bond0:{ip}<0>", tid=p.pid)
            line("cudaDriverVersion 12040", tid=p.pid)
            if i == 0:
                line(f"NCCL version {version}+cuda12.4", tid=p.pid)
            line("NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.", tid=p.pid)
            line("NET/IB : Using " + " ".join(f"[{d}]mlx5_{d}:1/IB" for d in range(8)) + f" [RO]; OOB bond0:{ip}<0>")
            line("Using network IB")
        line(f"ncclCommInitRank comm {comm} rank {i} nranks {nranks} cudaDev {p.local} nvmlDev {p.local} "
             f"busId {p.bus}000 commId {comm_id} - Init START")
        if first_comm:
            mask = "ffffffff,00000000,ffffffff" if p.local < 4 else "00000000,ffffffff,00000000,ffffffff"
            line(f"Setting affinity for GPU {p.local} to {mask}")
        line(f"comm {comm} rank {i} nRanks {nranks} nNodes {nnodes} localRanks {min(8, nranks)} "
             f"localRank {p.local if first_comm else i} MNNVL 0")
        if i == 0:
            order = "".join(f" {x:3d}" for x in range(nranks))
            for c in range(nch):
                line(f"Channel {c:02d}/{nch:02d} :  {order}", 0.0002)
        down, up = (i + 1 if i + 1 < nranks else -1), (i - 1 if i else -1)
        line("Trees " + " ".join(f"[{c}] {down}/-1/-1->{i}->{up}" for c in range(nch)))
        line("P2P Chunksize set to 524288")
        nxt = members[(i + 1) % nranks]
        for c in range(nch):
            if nxt.host != p.host:
                line(f"Channel {c:02d}/0 : {i}[{p.local}] -> {(i + 1) % nranks}[{nxt.local}] [send] via "
                     f"NET/IB/{p.local}/GDRDMA", 0.0008, tid=p.proxy_tid)
            else:
                line(f"Channel {c:02d}/0 : {i}[{p.local}] -> {(i + 1) % nranks}[{nxt.local}] via P2P/CUMEM/read",
                     0.0004)
        line("Connected all rings", 0.05)
        line("Connected all trees")
        line("threadThresholds 8/8/64 | 256/8/64 | 512 | 512")
        line(f"{nch} coll channels, {nch} collnet channels, 0 nvls channels, {nch} p2p channels, "
             "2 p2p channels per peer")
        line(f"ncclCommInitRank comm {comm} rank {i} nranks {nranks} cudaDev {p.local} nvmlDev {p.local} "
             f"busId {p.bus}000 commId {comm_id} - Init COMPLETE", 0.02)
        line(f"Init timings: rank {i} nranks {nranks} total {r.uniform(0.9, 1.6):.2f} (kernels 0.21, bootstrap "
             f"{r.uniform(0.2, 0.6):.2f}, allgathers 0.02, topo 0.18, graphs 0.03, connections 0.31, rest 0.04)")


TORCH_LIB = "/usr/local/lib/python3.10/dist-packages/torch/lib"
ELASTIC = "/usr/local/lib/python3.10/dist-packages/torch/distributed"


def cpp_frames(rank: int, where: str, seed: str) -> list[str]:
    """A C++ stack as c10 prints it; the same process shows the same addresses each time."""
    r = random.Random(f"{seed}:frames:{rank}")
    names = [
        ("c10::Error::Error(c10::SourceLocation, std::string) + 0x96", "libc10.so"),
        (where, "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler() + 0x233", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d", "libtorch_cuda.so"),
        ("<unknown function> + 0xdc253", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
        ("<unknown function> + 0x94ac3", "/lib/x86_64-linux-gnu/libc.so.6"),
        ("clone + 0x44", "/lib/x86_64-linux-gnu/libc.so.6"),
    ]
    base = {lib: 0x7F0000000000 + (r.getrandbits(28) << 12) for _, lib in names}
    return [f"frame #{i}: {fn} (0x{base[lib] + (sum(map(ord, fn)) * 4099) % 0xFFFFFF:x} in "
            f"{lib if lib.startswith('/') else TORCH_LIB + '/' + lib})" for i, (fn, lib) in enumerate(names)]


def pg_abort(log: Log, t: dt.datetime, rank: int, pg: str, pg_rank: int, seq: int, reason: str, *,
             timeout: bool, seed: str, tz: dt.tzinfo = UTC) -> None:
    """ProcessGroupNCCL's watchdog taking a process down, as torch 2.5 logs it (in the node's local time)."""
    pfx = f"[rank{rank}]:"

    def c10d(x: dt.datetime) -> str:
        return c10d_stamp(x.astimezone(tz))

    lines = []
    tt = t
    if timeout:
        lines.append((tt, f"{pfx}[{c10d(tt)} ProcessGroupNCCL.cpp:616] [Rank {pg_rank}] {reason}"))
    tt = after(tt, 0.0004)
    lines.append((tt, f"{pfx}[{c10d(tt)} ProcessGroupNCCL.cpp:1785] [{pg} Rank {pg_rank}] Exception (either an "
                      f"error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq + 1}, "
                      f"last completed NCCL work: {seq - 1}."))
    tt = after(tt, 0.0001)
    lines.append((tt, f"{pfx}[{c10d(tt)} ProcessGroupNCCL.cpp:630] [Rank {pg_rank}] Some NCCL operations have "
                      "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                      "operations might run on corrupted/incomplete data."))
    lines.append((tt, f"{pfx}[{c10d(tt)} ProcessGroupNCCL.cpp:636] [Rank {pg_rank}] To avoid data inconsistency, "
                      "we are taking the entire process down."))
    tt = after(tt, 0.0012)
    inner = f"[Rank {pg_rank}] {reason}" if timeout else reason
    what = f"[{pg} Rank {pg_rank}] Process group watchdog thread terminated with exception: {inner}"
    where = ("c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
             "std::ratio<1l, 1000l> > >) + 0x1d2") if timeout else (
        "c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException() + 0x7b")
    origin = "checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618" if timeout else (
        "checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027")
    block = [f"{pfx}[{c10d(tt)} ProcessGroupNCCL.cpp:1595] {what}", f"Exception raised from {origin} (most recent "
             "call first):", *cpp_frames(rank, where, seed), "", "terminate called after throwing an instance of "
             "'c10::DistBackendError'", f"  what():  {what}", f"Exception raised from {origin} (most recent call "
             "first):", *cpp_frames(rank, where, seed), "",
             "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1601 "
             "(most recent call first):"]
    frames = cpp_frames(rank, "<unknown function> + 0xe5aa84", seed)
    renumbered = (f.replace("#4", "#2").replace("#5", "#3").replace("#6", "#4") for f in frames[4:])
    block += [frames[0], frames[1], *renumbered, ""]
    lines.append((tt, "\n".join(block)))
    for when, text in lines:
        log.add(when, text)


def torchrun_failure(t: dt.datetime, host: str, agent: int, script: str, failures: list[tuple], *,
                     py: str = "python3.10", tz: dt.tzinfo = UTC) -> str:
    """The ChildFailedError block torchrun prints; failures: (rank, local, pid, exitcode, when, traceback)."""
    lt = t.astimezone(tz)
    root = min(failures, key=lambda f: (f[4], f[1]))
    others = [f for f in failures if f is not root]
    dist = f"/usr/local/lib/{py}/dist-packages/torch/distributed"
    out = [f"{glog(lt, 'E')} {agent} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
           f"{root[3]}) local_rank: {root[1]} (pid: {root[2]}) of binary: /usr/bin/python3",
           "Traceback (most recent call last):",
           '  File "/usr/local/bin/torchrun", line 8, in <module>',
           "    sys.exit(main())",
           f'  File "{dist}/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
           "    return f(*args, **kwargs)",
           f'  File "{dist}/run.py", line 919, in main',
           "    run(args)",
           f'  File "{dist}/run.py", line 910, in run',
           "    elastic_launch(",
           f'  File "{dist}/launcher/api.py", line 138, in __call__',
           "    return launch_agent(self._config, self._entrypoint, list(args))",
           f'  File "{dist}/launcher/api.py", line 269, in launch_agent',
           "    raise ChildFailedError(",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "=" * 60, f"{script} FAILED", "-" * 60, "Failures:"]

    def entry(idx: int, f: tuple) -> list[str]:
        rank, local, pid, code, when, tb = f
        return [f"[{idx}]:", f"  time      : {elastic_ts(when.astimezone(tz))}", f"  host      : {host}",
                f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
                f"  error_file: {tb[0] if tb[0] else '<N/A>'}", f"  traceback : {tb[1]}"]

    if not others:
        out.append("  <NO_OTHER_FAILURES>")
    for i, f in enumerate(sorted(others, key=lambda f: f[1]), start=1):
        out += entry(i, f)
    out += ["-" * 60, "Root Cause (first observed failure):", *entry(0, root), "=" * 60]
    return "\n".join(out)


def omp_banner(t: dt.datetime, agent: int) -> str:
    """torchrun's warning block at launch (its own clock's `t`, which may be local time)."""
    b = f"{glog(t, 'W')} {agent} torch/distributed/run.py:793] "
    return "\n".join([b, b + "*" * 41, b + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
                      "default, to avoid your system being overloaded, please further tune the variable for optimal "
                      "performance in your application as needed. ", b + "*" * 41])


def sigabrt(pid: int) -> tuple[str, str]:
    """The traceback field torchrun prints for a worker killed by SIGABRT."""
    return ("", f"Signal 6 (SIGABRT) received by PID {pid}")
