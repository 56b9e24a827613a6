"""How each failure mode shows up: the launch's last lines, the node's kernel lines, the controller's.

The ending of a launch is one of four shapes (`endings.family`): a hang until the NCCL watchdog
fires, a lost link or node seen as IB completion errors, one process crashing and its peers
following, or the scheduler ending the job. The root cause is written where a real cluster
writes it (an Xid in the node's kernel log, a traceback on one rank, a controller line); the
symptoms follow on every rank. The last stamped line is printed at exactly the attempt's end.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from clusterlab.simulator import adversarial, endings
from clusterlab.simulator.stamps import after, from_ms, glog, iso_s
from clusterlab.simulator.textlog import Log, Proc, pg_abort, sigabrt, torchrun_failure
from clusterlab.simulator.timeline import Attempt, Run
from clusterlab.simulator.trainlog import NCCL_VERSION

SCRIPT = "pretrain_gpt.py"
MEGATRON = "/opt/megatron-lm"


@dataclass
class Evidence:
    """What one launch's ending leaves behind, besides its own console."""

    kernel: list[tuple[str, int, str]] = field(default_factory=list)  # (host, epoch ms, kernel message)
    ctld: list[tuple[int, str]] = field(default_factory=list)  # (epoch ms, slurmctld message)
    state: tuple[str, str] = ("FAILED", "1:0")  # sacct State and ExitCode of the job


def _dp(p: Proc, gpn: int) -> tuple[str, int]:
    """The data-parallel process group of a rank (one per tensor-parallel rank) and its rank in it."""
    return f"PG ID {3 + p.local} PG GUID {3 + p.local}", p.rank // gpn


def _remote(detail: str) -> str:
    """The NCCL error a rank raises when a peer vanished, with the transport's last error."""
    return (f"NCCL error: remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            f"prematurely.\nLast error:\n{detail}")


def _summaries(log: Log, run: Run, att: Attempt, agents: dict[str, int], fails: dict[str, list[tuple]],
               times: list[int]) -> None:
    """Each node's torchrun ChildFailedError summary at its time, and srun's exit line after it."""
    for n, host in enumerate(att.hosts):
        if host not in fails or not fails[host]:
            continue
        t = from_ms(times[n])
        log.add(t, torchrun_failure(t, host, agents[host], SCRIPT, fails[host]))
        log.add(after(t, 0.3), f"srun: error: {host}: task {n}: Exited with exit code 1")


def ending(run: Run, att: Attempt, procs: list[Proc], agents: dict[str, int], r: random.Random,
           seed: str) -> tuple[Log, Evidence]:
    """The ending lines of the launch's console and the evidence elsewhere."""
    e = att.ending
    log, ev = Log(), Evidence()
    fam = endings.family(e.mode)
    if fam == "scheduler":
        _scheduler(log, ev, run, att, procs, agents)
        return log, ev
    culprit = next(p for p in procs if p.rank == e.rank)
    _kernel(ev, run, att, culprit, r)
    if e.kill:  # hung on the fault when the scheduler's verdict came: no watchdog lines, only the kill
        _scheduler(log, ev, run, att, procs, agents)
        return log, ev
    if fam == "hang":
        _hang(log, run, att, procs, agents, culprit, r, seed)
    else:
        _crash(log, ev, run, att, procs, agents, culprit, r, seed)
    log.add(from_ms(e.exit_ms + 500), f"+ echo 'job {att.job_id} finished with exit code 1'\n"
                                      f"job {att.job_id} finished with exit code 1")
    return log, ev


def _hang(log: Log, run: Run, att: Attempt, procs: list[Proc], agents: dict[str, int], culprit: Proc,
          r: random.Random, seed: str) -> None:
    """Every rank but the culprit waits for its all-reduce until the watchdog takes the process down."""
    e, gpn = att.ending, run.cluster.gpus_per_node
    seq = 24 * att.last_step + 13
    numel = 40108032
    trigger = from_ms(e.trigger_ms)
    hang_start = from_ms(max(e.root_ms, int(att.steps.end[-1]) + 50))
    fails: dict[str, list[tuple]] = {h: [] for h in att.hosts}
    for p in procs:
        if p is culprit:
            continue
        t = after(trigger, r.uniform(0.0, 0.12))
        if e.case == "gloo_hang":  # the wait is on a gloo group: no watchdog, the receive itself times out
            log.add(t, _gloo_timeout(p))
            fails[p.host].append((p.rank, p.local, p.pid, 1, after(t, 0.35), (_error_file(att, p), GLOO_TIMEOUT)))
            continue
        ran = int((t - hang_start).total_seconds() * 1000)
        work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
                f"Timeout(ms)={endings.WATCHDOG_MS})")
        pg, pg_rank = _dp(p, gpn)
        pg_abort(log, t, p.rank, pg, pg_rank, seq, f"Watchdog caught collective operation timeout: {work} ran for "
                 f"{ran} milliseconds before timing out.", timeout=True, seed=seed)
        fails[p.host].append((p.rank, p.local, p.pid, -6, after(t, 0.35), sigabrt(p.pid)))
    times = endings.summary_times(e.mode, e.trigger_ms, len(att.hosts), att.hosts.index(culprit.host))
    t_c = from_ms(times[att.hosts.index(culprit.host)])
    agent = agents[culprit.host]
    log.add(after(t_c, -0.5), f"{glog(after(t_c, -0.5), 'W')} {agent} torch/distributed/elastic/multiprocessing/"
                              f"api.py:897] Sending process {culprit.pid} closing signal SIGTERM")
    if e.mode == "gpu_fell_off_bus":  # the process on the lost GPU cannot be stopped
        log.add(after(t_c, -0.2), f"{glog(after(t_c, -0.2), 'W')} {agent} torch/distributed/elastic/"
                                  f"multiprocessing/api.py:916] Unable to shutdown process {culprit.pid} via "
                                  "Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
    if not fails[culprit.host]:  # a one-GPU node: the culprit is the only worker to report
        fails[culprit.host].append((culprit.rank, culprit.local, culprit.pid, -9, after(t_c, -0.2), ("", "<N/A>")))
    _summaries(log, run, att, agents, fails, times)


# gloo's own words (gloo/transport/tcp/unbound_buffer.cc, as torch 2.x's builds print the source path) when a peer
# never sends: the group's timeout is the one Megatron gives every group (--distributed-timeout-minutes, 10)
GLOO_TIMEOUT = (f"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
                f"{endings.WATCHDOG_MS}ms for recv operation to complete")


def _error_file(att: Attempt, p: Proc) -> str:
    """The error file torchrun's @record writes for a worker that raised."""
    return f"/tmp/torchelastic_{att.job_id}/{att.job_id}_0/attempt_0/{p.local}/error.json"


def _gloo_timeout(p: Proc) -> str:
    """The traceback of a rank whose all-reduce on a gloo group waited for a peer that never sent."""
    dist = "/usr/local/lib/python3.10/dist-packages/torch/distributed"
    lines = ["Traceback (most recent call last):", f'  File "{MEGATRON}/pretrain_gpt.py", line 284, in <module>',
             "    pretrain(", f'  File "{MEGATRON}/megatron/training/training.py", line 386, in pretrain',
             "    iteration, num_floating_point_operations_so_far = train(",
             f'  File "{MEGATRON}/megatron/training/training.py", line 1412, in train',
             "    torch.distributed.all_reduce(num_zeros_t, group=mpu.get_data_parallel_group_gloo())",
             f'  File "{dist}/c10d_logger.py", line 83, in wrapper', "    return func(*args, **kwargs)",
             f'  File "{dist}/distributed_c10d.py", line 2501, in all_reduce', "    work.wait()", GLOO_TIMEOUT]
    return "\n".join(f"[rank{p.rank}]: {ln}" for ln in lines)


_CULPRIT: dict[str, tuple[str, str, str]] = {
    # mode: (exception line, the frame that raised it, its source line)
    "gpu_memory_ecc": ("RuntimeError: CUDA error: uncorrectable ECC error encountered",
                       'megatron/core/distributed/param_and_grad_buffer.py", line 371, in start_grad_sync',
                       "self.grad_data *= self.gradient_scaling_factor"),
    "cuda_error": ("RuntimeError: CUDA error: an illegal memory access was encountered",
                   'megatron/core/transformer/moe/token_dispatcher.py", line 212, in token_permutation',
                   "permuted_tokens = tokens.index_select(0, sorted_indices)"),
    "user_code_error": ("IndexError: index 4194305 is out of bounds for axis 0 with size 4194304",
                        'megatron/core/datasets/gpt_dataset.py", line 263, in __getitem__',
                        "text = self.dataset.get(doc_ids[doc_index_beg], offset=offset)"),
    "filesystem_io": ("OSError: [Errno 5] Input/output error: '/lustre/data/tokens/shard-00731.bin'",
                      'megatron/core/datasets/indexed_dataset.py", line 402, in read',
                      "return numpy.frombuffer(self.bin_buffer, dtype=dtype, count=count, offset=offset)"),
    "loss_divergence": ("", 'megatron/core/rerun_state_machine.py", line 512, in validate_result',
                        "raise RuntimeError(full_message)"),
}


def _culprit_block(run: Run, att: Attempt, p: Proc) -> tuple[str | None, str, int]:
    """The culprit's own lines (None for a process killed by a signal), what torchrun records, its exit code."""
    e = att.ending
    if e.mode == "host_hw":
        return None, f"Signal 7 (SIGBUS) received by PID {p.pid}", -7
    # a GPU computing NaNs trips the same numerics check as a diverging model, on its own rank only
    exc, frame, code = _CULPRIT["loss_divergence" if e.mode == "silent_data_corruption" else e.mode]
    if e.server and e.server != adversarial.LUSTRE_TARGET:  # the training data on the lost NFS server's soft mount
        exc = f"OSError: [Errno 5] Input/output error: '/mnt/{e.server}/data/tokens/shard-00412.bin'"
    if e.case == "sticky_init":  # the first forward's allocation fails on a GPU whose memory is still bad
        exc = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU {p.local} has a total "
               "capacity of 79.10 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has "
               "78.06 GiB memory in use. Of the allocated memory 74.21 GiB is allocated by PyTorch, and 2.36 GiB is "
               "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
               "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
        frame, code = ('megatron/core/transformer/mlp.py", line 148, in forward',
                       "intermediate_parallel, bias_parallel = self.linear_fc1(hidden_states)")
    if e.case == "remap_pending" and adversarial.remap_bare(run):  # what the process saw of the pending row
        exc, frame, code = _CULPRIT["cuda_error"]
    if e.mode in ("loss_divergence", "silent_data_corruption"):
        exc = (f"RuntimeError: Rank {p.rank}, node {p.host}, device {p.local}, iteration {att.last_step + 1}: "
               "Unexpected result nan (message='found NaN in local grad norm for bucket #0 in backward pass before "
               "data-parallel communication collective')")
    lines = ["Traceback (most recent call last):", f'  File "{MEGATRON}/pretrain_gpt.py", line 284, in <module>',
             "    pretrain(", f'  File "{MEGATRON}/megatron/training/training.py", line 386, in pretrain',
             "    iteration, num_floating_point_operations_so_far = train(",
             f'  File "{MEGATRON}/megatron/training/training.py", line 1340, in train_step',
             "    losses_reduced = forward_backward_func(", f'  File "{MEGATRON}/{frame}', f"    {code}", exc]
    if "CUDA error" in exc:
        lines += ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                  "below might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"]
    return "\n".join(f"[rank{p.rank}]: {ln}" for ln in lines), exc, 1


def _crash(log: Log, ev: Evidence, run: Run, att: Attempt, procs: list[Proc], agents: dict[str, int],
           culprit: Proc, r: random.Random, seed: str) -> None:
    """One process (or node, or link) goes first; its peers' collectives fail; torchrun reports."""
    e, gpn = att.ending, run.cluster.gpus_per_node
    trigger = from_ms(e.trigger_ms)
    seq = 24 * att.last_step + 7
    lost_node = e.mode == "node_failure"
    n_c = att.hosts.index(culprit.host)
    fails: dict[str, list[tuple]] = {h: [] for h in att.hosts}
    first: dict[int, str] = {}  # rank -> the error it reports first
    if endings.family(e.mode) == "link":
        first = _ib_errors(log, run, att, procs, culprit, trigger, r)
    else:
        block, what, code = _culprit_block(run, att, culprit)
        if block:
            log.add(trigger, block)
        err = _error_file(att, culprit) if block else ""
        fails[culprit.host].append((culprit.rank, culprit.local, culprit.pid, code, trigger, (err, what)))
    for p in procs:
        if (lost_node and p.host == culprit.host) or (p is culprit and not first):
            continue
        if p.host == culprit.host and not first and p is not culprit:
            tt = after(trigger, 0.4 + 0.001 * p.local)  # torchrun stops the culprit's neighbours
            log.add(tt, f"{glog(tt, 'W')} {agents[p.host]} torch/distributed/elastic/multiprocessing/api.py:897] "
                        f"Sending process {p.pid} closing signal SIGTERM")
            continue
        t = after(trigger, r.uniform(0.6, 1.4)) if p.rank not in first else after(trigger, 0.45)
        port = r.randint(33000, 60999)
        detail = first.get(p.rank) or f"socketProgress: Connection closed by remote peer {culprit.host}<{port}>"
        pg, pg_rank = _dp(p, gpn)
        pg_abort(log, t, p.rank, pg, pg_rank, seq, _remote(detail), timeout=False, seed=seed)
        fails[p.host].append((p.rank, p.local, p.pid, -6, after(t, 0.3), sigabrt(p.pid)))
    times = endings.summary_times(e.mode, e.trigger_ms, len(att.hosts), n_c)
    _summaries(log, run, att, agents, fails, times)
    if lost_node:
        down = e.root_ms + r.randint(60_000, 110_000)
        ev.ctld.append((down, f"error: Nodes {culprit.host} not responding, setting DOWN"))
    if e.case == "maint_reboot":  # the operator's drain, minutes before the node went away under the job
        drained = e.root_ms - 60_000 * (3 + att.k % 4)
        ev.ctld += [(drained, f"update_node: node {culprit.host} reason set to: {adversarial.REBOOT_REASON}"),
                    (drained + 1, f"update_node: node {culprit.host} state set to DRAIN")]


def _ib_errors(log: Log, run: Run, att: Attempt, procs: list[Proc], culprit: Proc, trigger: dt.datetime,
               r: random.Random) -> dict[int, str]:
    """IB completion errors on the ranks whose ring neighbour is the broken link or node."""
    hosts = att.hosts
    n_c = hosts.index(culprit.host)
    near = {hosts[(n_c - 1) % len(hosts)], hosts[(n_c + 1) % len(hosts)]} - {culprit.host}
    rails = [culprit.local] if att.ending.mode == "network" else range(run.cluster.gpus_per_node)
    out: dict[int, str] = {}
    for p in procs:
        if p.local not in rails:
            continue
        if p.host in near:
            peers = [culprit.host]
        elif p.host == culprit.host and att.ending.mode == "network":
            peers = sorted(near)
        else:
            continue
        t = after(trigger, r.uniform(0.0, 0.03))
        for peer in peers:
            t = after(t, r.uniform(0.0005, 0.002))
            err = (f"NET/IB : Got completion from peer {run.cluster.ip(peer)}<{r.randint(33000, 60999)}> with "
                   f"status=12 opcode={r.choice((0, 1, 128))} len=0 vendor err 129 ({r.choice(('Send', 'Recv'))})")
            log.add(t, f"{p.prefix(p.proxy_tid)} transport/net_ib.cc:2160 NCCL WARN {err}")
            log.add(after(t, 0.0001), f"{p.prefix(p.proxy_tid)} NCCL INFO transport/net.cc:1295 -> 6\n"
                                      f"{p.prefix(p.proxy_tid)} NCCL INFO proxy.cc:698 -> 6")
            out[p.rank] = err
    return out


def _scheduler(log: Log, ev: Evidence, run: Run, att: Attempt, procs: list[Proc], agents: dict[str, int]) -> None:
    """The scheduler ends the job (preemption, time limit, scancel): banner, then every agent shuts down."""
    e = att.ending
    verdict = e.kill or e.mode
    t = from_ms(e.trigger_ms)
    # slurmstepd's banner (src/slurmd/slurmstepd/req.c): no DUE TO for a plain scancel
    why = {"preemption": " DUE TO PREEMPTION", "time_limit": " DUE TO TIME LIMIT"}.get(verdict, "")
    if e.case == "maintenance":
        why = ""  # root's scancel: no reason in the banner
    log.add(t, f"slurmstepd: error: *** JOB {att.job_id} ON {att.hosts[0]} CANCELLED AT {iso_s(t)}{why} ***")
    log.add(after(t, 0.004), f"slurmstepd: error: *** STEP {att.job_id}.0 ON {att.hosts[0]} CANCELLED AT "
                             f"{iso_s(t)}{why} ***")
    log.add(after(t, 0.01), "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    times = endings.summary_times(e.mode, e.trigger_ms, len(att.hosts), None)
    for n, host in enumerate(att.hosts):
        tt = from_ms(times[n])
        lines = [f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/agent/server/api.py:704] Received "
                 "Signals.SIGTERM death signal, shutting down workers"]
        lines += [f"{glog(tt, 'W')} {agents[host]} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                  f"process {p.pid} closing signal SIGTERM" for p in procs if p.host == host]
        lines += ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
                  "    sys.exit(main())", "torch.distributed.elastic.multiprocessing.api.SignalException: Process "
                  f"{agents[host]} got signal: 15"]
        log.add(tt, "\n".join(lines))
        log.add(after(tt, 2.2), f"srun: error: {host}: task {n}: Exited with exit code 1")
    if e.case == "maintenance":
        # the operator drains every node of the job for an emergency maintenance, then root cancels the job
        drained = e.trigger_ms - 60_000 * (2 + att.k % 5)
        for n, host in enumerate(att.hosts):
            ev.ctld.append((drained + 400 * n, f"update_node: node {host} reason set to: "
                                               f"{adversarial.MAINTENANCE_REASON}"))
            ev.ctld.append((drained + 400 * n + 1, f"update_node: node {host} state set to DRAIN"))
        ev.ctld.append((e.trigger_ms - 40, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={att.job_id} uid "
                                           f"{adversarial.ROOT_UID}"))
        ev.state = (f"CANCELLED by {adversarial.ROOT_UID}", "0:0")
    elif verdict == "preemption":
        ev.ctld.append((e.trigger_ms + 5, f"preempted JobId={att.job_id} has been killed to reclaim resources for "
                                          f"JobId={int(att.job_id) + 500}"))
        ev.state = ("PREEMPTED", "0:15")
    elif verdict == "manual_stop":
        # slurmctld's RPC log line, and sacct's `CANCELLED by <uid>`
        ev.ctld.append((e.trigger_ms - 40, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={att.job_id} uid "
                                           f"{adversarial.CANCEL_UID}"))
        ev.state = (f"CANCELLED by {adversarial.CANCEL_UID}", "0:0")
    else:
        ev.ctld.append((e.trigger_ms + 3, f"Time limit exhausted for JobId={att.job_id}"))
        ev.state = ("TIMEOUT", "0:0")


def _kernel(ev: Evidence, run: Run, att: Attempt, p: Proc, r: random.Random) -> None:
    """The root cause in the culprit node's kernel log, where the mode leaves one."""
    e, bus, h, t = att.ending, p.bus, p.host, att.ending.root_ms
    xid = f"NVRM: Xid (PCI:0000:{bus}:00): {{}}, pid={p.pid}, name=python, {{}}"
    msgs: list[tuple[int, str]] = []
    if e.mode == "gpu_fell_off_bus":
        msgs = [(0, xid.format(79, "GPU has fallen off the bus.")),
                (1, f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus."),
                (21, "NVRM: A GPU crash dump has been created. If possible, please run\nNVRM: nvidia-bug-report.sh "
                     "as root to collect this data before\nNVRM: the NVIDIA kernel module is unloaded.")]
        msgs += [(int(122_900 * k + 400), f"INFO: task python:{p.pid} blocked for more than {122 * k} seconds.")
                 for k in (1, 2, 3, 4)]
    elif e.mode == "gpu_hw_other":
        msgs = [(0, xid.format(119, f"Timeout after 6s of waiting for RPC response from GPU{p.local} GSP! Expected "
                                    "function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4)."))]
    elif e.mode == "nvlink_error":
        msgs = [(0, xid.format(74, f"NVLink: fatal error detected on link {r.randint(0, 17)}(0x0, 0x0, 0x10000, "
                                   "0x0, 0x0, 0x0, 0x0)"))]
    elif e.mode == "gpu_memory_ecc" and e.case == "sticky_init":
        msgs = []  # its memory failed under the launch before (Xid 48 then): nothing new in the kernel log
    elif e.case == "remap_pending" and adversarial.remap_bare(run):
        msgs = []  # the row still pending remap returned bad data: the process saw a CUDA error, the driver no Xid
    elif e.mode == "gpu_memory_ecc":
        # sticky: a double-bit error, whose rows stay bad; remap_pending: the pending row's error uncorrected
        contained = r.random() < 0.6 and e.case not in ("sticky", "remap_pending")
        msgs = [(0, xid.format(94, "Contained: SM (0x1). RST: No, D-RST: No") if contained else
                 xid.format(48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
                                "at partition 6, subpartition 0."))]
    elif e.mode == "pcie_error":
        msgs = [(0, f"pcieport 0000:{bus[0]}0:01.0: AER: Uncorrectable (Fatal) error message received from "
                    f"0000:{bus}:00.0"),
                (0, f"nvidia 0000:{bus}:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction "
                    "Layer, (Requester ID)"),
                (0, f"nvidia 0000:{bus}:00.0:   device [10de:2330] error status/mask=00004000/00000000")]
    elif e.mode == "host_hw":
        msgs = [(0, f"mce: [Hardware Error]: CPU {r.randint(0, 111)}: Machine Check Exception: 5 Bank 13: "
                    "be00000000800400"),
                (1, "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#2_DIMM#0 (channel:2 slot:0 "
                    "page:0x4a3f1f offset:0x0 grain:32 -  OVERFLOW err_code:0101:0092 socket:1 imc:0 rank:1)"),
                (2, f"Memory failure: 0x4a3f1f: Sending SIGBUS to python:{p.pid} due to hardware memory corruption")]
    elif e.mode == "cuda_error":
        msgs = [(0, xid.format(31, "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted "
                                   "@ 0x7f2a_4c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"))]
    elif e.mode == "filesystem_io" and e.server:
        ev.kernel += adversarial.storage_lines(run, att, r)
        return
    elif e.mode == "filesystem_io":
        osc = "lustre-OST0003-osc-ffff9a3c1e2f8000"
        msgs = [(-900, f"Lustre: {osc}: Connection to lustre-OST0003 (at 10.40.0.13@o2ib) was lost; in progress "
                       "operations using this service will wait for recovery to complete"),
                (-200, f"LustreError: 11-0: {osc}: operation ost_read to node 10.40.0.13@o2ib failed: rc = -107")]
    elif e.mode == "network":
        pci = f"0000:{['0c', '1a', '3c', '4d', '8c', '9a', 'bc', 'cd'][p.local]}:00.0"
        msgs = [(0, f"mlx5_core {pci} mlx5_{p.local}: Port: 1 Link DOWN"),
                (44_800, f"mlx5_core {pci} mlx5_{p.local}: Port: 1 Link INIT"),
                (49_300, f"mlx5_core {pci} mlx5_{p.local}: Port: 1 Link ACTIVE")]
    ev.kernel += [(h, t + dt_ms, m) for dt_ms, m in msgs]
    if e.case in ("remap_pending", "remap_reset"):  # the row its GPU marked for remapping before the launch
        kernel, ctld = adversarial.remap_lines(run, att, bus, r)
        ev.kernel += [(h, at, m) for at, m in kernel]
        ev.ctld += ctld
