"""PyTorch distributed failures: ProcessGroupNCCL watchdog, torchrun summaries, CUDA and NCCL errors, tracebacks.

Formats (torch 1.x to 2.10), behind launcher prefixes (`[rank3]:`, `[default3]:`, srun `3: `):
    [rank3]:[E1125 10:15:01.123456789 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective ...
    [E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught ...                (c10 logging before 2.4: no time)
    [PG ID 0 PG GUID 0(default_pg) Rank 3] ...                                (2.5+ log prefix; [PG 0 Rank 3] 2.2-2.4)
    E1125 10:15:03.456000 1234 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -6) ...
    [2024-04-10 16:02:56,193] torch.distributed.elastic.multiprocessing.api: [ERROR] failed ...   (2.1-2.3)
    ERROR:torch.distributed.elastic.multiprocessing.api:failed ...                               (<= 2.0)
    the ChildFailedError summary (`Root Cause (first observed failure):`, `[0]:`, `  time      : ...`;
        torch 1.9: `Root Cause:` first, `  time: ...`, `  msg: "..."`, `Other Failures:` last)
    the TORCH_NCCL_DESYNC_DEBUG report (`\t - [3] Timeout at collective: ALLREDUCE, #41208`, tab-indented, no header)
    DataLoader workers lost (`DataLoader worker (pid 1234) is killed by signal: Bus error. ...`)
    CUDA / NCCL errors and Python tracebacks (`Traceback (most recent call last):` ... `ExcType: message`).
Times without a year (glog) take ctx.year; all are the node's local time (ctx.tz), or the job's processes' own
(ctx.proc_tz: a container in UTC on a site in local time).
"""

from __future__ import annotations

import re
import signal

import polars as pl

from clusterlab.collectors import _launcher_prefix, _torch_exceptions, _torch_summary
from clusterlab.collectors import _torch_exits as exits
from clusterlab.collectors import _torch_literals as lits
from clusterlab.collectors._base import (
    AT_EXIT,
    FILE_LINE_BASE,
    Context,
    Parsed,
    cuda_mode,
    file_of_line,
    first_kind,
    local_to_utc,
    year_of,
    yearless,
)

NAME = "torch"
EXCLUSIVE = False
# where a multi-line block begins: the ingest engine never cuts a batch inside one it can see whole
BLOCK_START = r"Traceback \(most recent call last\)|Root Cause(?: \(first observed failure\))?:\s*$|Failures:\s*$"
_START = r"Setting OMP_NUM_THREADS environment variable for each process|Starting elastic_operator with launch"
# The DeepSpeed launcher: its runner prints the command it starts on every node once a launch (`[runner.py:568:main]
# cmd = pdsh -S -f 1024 -w ...`); each node's launch.py reports a worker that ended cleanly (`Process N exits
# successfully.`), the launch's last word when the job completes (a final save may end just before it)
_PDSH_INTERRUPT = r"^pdsh@[\w.-]+: interrupt \(one more within 1 sec to abort\)"
_DS_START = r"\[runner\.py:\d+:main\] cmd = "
_DS_END = r"\[launch\.py:\d+:main\] Process \d+ exits successfully\."
# NOTE: an exception class whose name says no `Error` is known by its module path (`pyarrow.lib.ArrowInvalid: Parquet
# magic bytes not found in footer`, `google.api_core.exceptions.NotFound: 404 ...`): a dotted lower-case path, then a
# capitalised class name and `: ` (a logger's `torch.distributed.run: [WARNING]` ends lower-case)
_QUALIFIED_EXC = r"(?:^|[\s:)\]])(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Za-z0-9]*: \S"
# A traceback's frame line (`  File "/x/y.py", line 189, in f`): where a file begins with one (or with the code line
# under one), the traceback was pasted from its middle, its header cut: the frame opens it (`_fields`, is_tb)
_FRAME = r"^\s*File \"[^\"]+\", line \d+, in \S"
# the lines of a file within which a frame opens a headless traceback: the frame, or the code line then the frame
_CUT_TB_LINES = 2
# a CUDA kernel's own assertion, one line per failing GPU thread (kind `device_assert`)
_DEVICE_ASSERT = r"\.cuh?:\d+: \w+: block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion .* failed\."
PATTERN = "|".join([
    r"ollective operation timeout|watchdog thread terminated with exception|Heartbeat monitor timed out",
    r"Watchdog caught collective|\) ran for \d+ milliseconds before timing out",
    r"timed out in (?:blocking wait|call to wait\(\)|monitoredBarrier)|failed to pass monitoredBarrier in \d",
    r"To avoid data inconsistency, we are taking the entire process",
    # NOTE: c10d's store logs its own line before (or without) the exception: `[E728 15:01:59.561275187
    # socket.cpp:1028] [c10d] The client socket has timed out after 600000ms while trying to connect to (...)`
    r"The client socket has timed out after \d|connect\(\) timed out\. Original timeout was \d|Gloo connectFullMesh fa",
    r"via c10d key-value store by key |Timed out initializing process group in store|Timed out waiting \d+ms for ",
    r"Received a dump signal due to a collective timeout|Observed flight recorder dump signal",
    r"\[c10d\] (?:recvValue|recvBytes|sendBytes) failed on SocketImpl|flag on TCPStore, \(maybe TCPStore server",
    r"\] Timeout at collective: |ranks that caused the desync are|didn't finish collective #",
    r"but didn't join collective #|are the lagging ranks that caused this timeout",
    r"DataLoader worker \(pid|Unexpected bus error encountered in worker|" + _torch_exceptions.STORAGE_FULL,
    r"watchdog got stuck for|Received a global timeout from another rank|Some NCCL operations have failed",
    r"detected by watchdog at work|Timeout at NCCL work: |NCCL communicator was aborted",
    r"CUDA out of memory|CUDA (?:driver )?error: |NCCL [Ee]rror|Unknown NCCL error",
    r"THCudaCheck FAIL|cuda runtime error \(\d+\)|cudaError[A-Z]\w*: |CUDA_ERROR_[A-Z_]+: |Triton Error \[CUDA\]: ",
    r"cublas runtime error : |cudnn runtime error : |CUBLAS failure \d|CUDNN failure \d|\b[Cc]u[Dd][Nn][Nn] error: ",
    r"Check failed: status == CU(?:BLAS|DNN)_STATUS_SUCCESS", _DEVICE_ASSERT,
    r"_STATUS_ALLOC_FAILED|HIP out of memory|unable to write to file </torch_|NVIDIA driver on your system is too",
    r"Root Cause(?: \(first observed failure\))?:\s*$|Failures:\s*$",
    r"  (?:time      |host      |rank      |exitcode  |error_file|traceback ): ",
    r"  (?:time: \d{4}-\d\d-\d\d_|rank: \d+ \(local_rank|exitcode: -?\d+ \(pid|msg: \")",
    r"failed \(exitcode: -?\d+\) local_rank: |attempts left; will restart worker group",
    r"new nodes from group_rank=\d+; will restart worker group|\] Starting worker group\s*$",
    exits.LAUNCHER_EXIT,
    r"death signal, shutting down workers|terminate called after throwing an instance of",
    r"Unable to shutdown process \d+ via (?:Signals\.)?SIGTERM|" + _torch_exceptions.RENDEZVOUS_LOST,
    _START, _DS_START, _DS_END, _PDSH_INTERRUPT, _torch_exceptions.BACKGROUND,
    r"Traceback \(most recent call last\)|During handling of the above exception|The above exception was the direct",
    r"\w(?:Error|Exception|Interrupt|Exit)(?::\s|:?\s*$)", _QUALIFIED_EXC,
    r'File "[^"]+", line \d+, in \S',  # (behind any launcher prefix: `_FRAME` is read on the line's body)
])

_SNIFF = re.compile(
    # NOTE: `c10d` (PyTorch's distributed library) names its store's errors in a line pasted alone
    rb"ProcessGroupNCCL|torch[./]distributed|c10d|ChildFailedError|CUDA out of memory|CUDA error: |OutOfMemoryError"
    rb"|Watchdog caught collective operation timeout|NCCL communicator was aborted|Some NCCL operations have failed"
    rb"|To avoid data inconsistency, we are taking|NCCL error in: |nccl[A-Z]\w*Error: |Timeout at collective: "
    rb"|death signal, shutting down workers|DataLoader worker \(pid|Unexpected bus error encountered in worker"
    rb"|: interrupt \(one more within 1 sec to abort\)"
    rb"|\] exits with return code = -?\d|terminated with signal SIG|died with <Signals\."
    rb"|The server socket has failed to listen on any local network address|Gloo connectFullMesh failed"
    rb"|The NVIDIA driver on your system is too old|\], thread: \[\d+,\d+,\d+\] Assertion "
    # NOTE: ncclGetErrorString's words as a Python wrapper raises them (`RuntimeError: NCCL error: unhandled system
    # error`: vLLM's pynccl, a traceback cut before its head, behind a serving engine's own log prefix)
    rb"|NCCL error: (?:unhandled (?:cuda|system) error|internal error|invalid (?:argument|usage)|remote process)"
    # NOTE: a traceback is evidence wherever it appears: a file holding only one (`excerpt.log`) is read too
    rb"|Traceback \(most recent call last\)|THCudaCheck FAIL|cuda runtime error \(\d+\)|cudaError[A-Z]\w*: "
    rb"|CUDA_ERROR_[A-Z_]+: |Triton Error \[CUDA\]: |failed to pass monitoredBarrier|timed out in monitoredBarrier"
    rb"|cu(?:blas|dnn) runtime error : |CU(?:BLAS|DNN) failure \d+: |\b[Cc]u[Dd][Nn][Nn] error: CUDNN_STATUS_"
    rb"|Check failed: status == CU(?:BLAS|DNN)_STATUS_SUCCESS"
    rb"|(?m:^(?:Killed|Segmentation fault|Bus error|Aborted)(?: \(core dumped\))?\r?$)|Fatal Python error: "
    rb"|: line \d+: +\d+ (?:Killed|Segmentation fault|Bus error|Aborted)\s|(?m:^\[\d+\][+-]? +Killed\s+\S)"
    rb"|(?m:^zsh: (?:killed|segmentation fault|bus error|abort)\s)|(?m:^\[rank\d{1,6}\]: )"  # torchrun's rank prefix
    rb"|No space left on device|Disk quota exceeded|APPLICATION TERMINATED WITH THE EXIT STRING: "
    # a traceback pasted from its middle: the file begins with a frame line (behind a launcher's prefix), or the code
    rb"|\A(?:[^\n]*\n)?(?:\s*(?:" + _launcher_prefix.RANK_LINE + rb")){0,3}\s*File \"[^\"\n]+\", line \d+, in "
)
# srun --label `3: `, a Ray actor `(Worker pid=1, ip=...) ` or SkyPilot's node `(worker1, rank=1, pid=2, ip=...) `,
# torchrun `[rank3]:` / `[default3]:` (`[3]:`: no role name), mpirun `[1,3]<...>:`, horovodrun `[3]<...>:`
_LAUNCHER = (r"^(?P<pfx>(?:\s*(?P<task>\d{1,6}): )?(?:\([\w.-]+,? (?:rank=\d+, )?pid=\d+(?:, ip=[\w.:]+)?\) )?"
             # torchrun --tee before c10d's own prefix: `[rank0]:[rank8]:[E1125 ...`, the inner is global
             r"(?:(?:\[(?:rank|default)\d{1,6}\]:)?\[rank(?P<prank>\d{1,6})\]: ?|\[(?:default)?(?P<plocal>\d{1,4})\]: ?"
             # NOTE: Horovod's launcher tags a line with the rank alone (`[1]<stderr>:`), mpirun with the job too
             r"|\[(?:\d+,)?(?P<mrank>\d+)\]<std(?:out|err)>: ?)?)(?P<rest>.*)$")
_GLOG = (r"^\[?(?P<lvl>[IWEF])(?:(?P<md>\d{3,4}) (?P<hms>\d\d:\d\d:\d\d(?:\.\d+)?)(?: +\d+)?)? "
         r"(?P<src>[\w./-]+:\d+)\] ?(?P<gmsg>.*)$")
# python logging's `[ts] name: [LEVEL] msg`, DeepSpeed's `[ts] [LEVEL] [launch.py:325:sigkill_handler] msg`, NVRx's
# ft_launcher (torchrun's agent) `[ts] [LEVEL] [ft_launcher4321@node-7] msg`
_PYLOG = (r"^\[(?P<pyts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<ms>\d{3})\] (?:[\w.]+: \[\w+\]|\[[A-Z]+\] "
          r"\[(?:[\w.]+:\d+:\w+|ft_launcher\d*@(?P<pyhost>[A-Za-z0-9][\w.-]*))\]) (?P<pmsg>.*)$")
# pdsh / clush (the DeepSpeed launcher's multinode runner) relay each node's lines behind `<node>: `, before any
# prefix of the node's own launcher: a node only where the inventory knows it (`RuntimeError: ...` is no node)
_RELAY = r"^([A-Za-z][\w.-]*): "
_OLDLOG = r"^(?:ERROR|WARNING|INFO|CRITICAL):torch[\w.]*:(?P<omsg>.*)$"
_EXC = (r"^(?P<ind>\s*)(?P<exc_type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)"
        r"|(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Za-z0-9]*)"
        r"(?::\s?(?P<exc_msg>.*?))?\s*$")
_FIELD = r"^  (?P<field>time|host|rank|exitcode|error_file|traceback|msg) *: ?(?P<value>.*?)\s*$"
# The field lines a summary really prints (padded since 1.10; 1.9's unpadded ones only with their value's shape):
# a line "  time: 0.5" elsewhere in a log is no summary field.
_FIELD_LINE = (r"^  (?:(?:time      |host      |rank      |exitcode  |error_file|traceback ): ?"
               r"|time: \d{4}-\d\d-\d\d_|rank: \d+ \(local_rank|exitcode: -?\d+ \(pid|msg: \")")
_TB_START = r"^\s*(?:traceback : |Original )?Traceback \(most recent call last\):(?: \(RANK \d+\))?\s*$"
# Tracebacks inside an exception's message, their exceptions its causes: a CheckpointException's ranks' (`... (RANK
# 4)`), a DataLoader worker's that torch re-raises (`OSError: Caught OSError in DataLoader worker process 3.`)
_RANK_TB = (r"Traceback \(most recent call last\): \(RANK \d+\)\s*$"
            r"|^\s*Original Traceback \(most recent call last\):\s*$")
_CHAIN = r"During handling of the above exception|The above exception was the direct cause"

# Content kinds in the order tried: (kind, regex on the message, failure mode or None, severity).
# (gloo's own: `Timed out waiting 1800000ms for recv operation to complete`, what a rank waiting on a peer raises)
# NOTE: monitored_barrier (gloo) names the ranks that never arrived (`[Rank 0]: Ranks 4, 5 failed to pass
# monitoredBarrier in 2000000 ms`, a late rank's `Rank 3 timed out in monitoredBarrier after 1800000 ms`): a hang
_TIMEOUT = (r"ollective operation timeout|timed out in (?:blocking wait|call to wait\(\)|monitoredBarrier)"
            r"|failed to pass monitoredBarrier in \d+ ?ms"
            r"|Timed out waiting \d+ms for (?:recv|send) operation to complete"
            # a report pasted with its lines wrapped at a terminal's width keeps one half or the other
            r"|Watchdog caught collective|\) ran for \d+ milliseconds before timing out")
# A CUDA runtime error as torch words it (2.x `CUDA error: `, THC's `cuda runtime error (39) : ` of torch <= 1.4 and its
# `THCudaCheck FAIL file=... error=39 : `), or as a CUDA enum name a library prints (`cudaErrorECCUncorrectable: `)
# NOTE: a CUDA library's own status outside torch's 'CUDA error: CUBLAS_STATUS_...' wording: THC's 'cublas runtime
# error : the GPU program failed to execute', CNTK's 'CUBLAS failure 13: CUBLAS_STATUS_EXECUTION_FAILED ; GPU=1',
# Caffe's glog check 'Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)  CUDNN_STATUS_EXECUTION_FAILED', torch's
# cuDNN check 'cuDNN error: CUDNN_STATUS_INTERNAL_ERROR' (no 'CUDA error: ' before it; 1.0 spelt it 'CuDNN')
_CUDA_ERR = (r"(?:CUDA (?:driver )?error: |cuda runtime error \(\d+\) : |THCudaCheck FAIL .*? error=\d+ : "
             r"|\bcudaError[A-Z]\w*: |\bCUDA_ERROR_[A-Z_]+: |Triton Error \[CUDA\]: "
             r"|cu(?:blas|dnn) runtime error : |\bCU(?:BLAS|DNN) failure \d+: |\b[Cc]u[Dd][Nn][Nn] error: "
             r"|Check failed: status == CU(?:BLAS|DNN)_STATUS_SUCCESS \(\d+ vs\. 0\)\s*)")
# ... and a store's server that cannot bind its port (EADDRINUSE: another job, a stale process; errno 99: an address
# not the host's): the launch's own configuration, not the network (torch 2.4+ DistNetworkError, RuntimeError before)
_STORE_CONNECT = (r"connect\(\) timed out\. Original timeout was \d+ ?ms"
                  # NOTE: c10d prints the timeout as a std::chrono duration (`600000ms`, `1800s`, `20min`); a
                  # report cut at a terminal's width may keep only the line's first half
                  r"|The client socket has timed out after \d+ ?(?:ms|s|min|h)(?: while trying to connect|\s*$)")
_KINDS: list[tuple[str, str, str | None, str]] = [
    ("watchdog_terminated", r"watchdog thread terminated with exception", None, "critical"),
    ("comm_aborted", r"NCCL communicator was aborted", None, "error"),
    ("watchdog_timeout", _TIMEOUT, "nccl_timeout", "error"),
    ("heartbeat_timeout", r"Heartbeat monitor timed out|watchdog got stuck for", "nccl_timeout", "critical"),
    ("timeout_notified", r"Received a global timeout from another rank", "nccl_timeout", "warning"),
    # c10d's store: a rank waited for a key a peer never wrote (STORE_TIMEOUT): the peer hangs or is late, as in a hang
    ("store_timeout", _torch_exceptions.STORE_TIMEOUT, "nccl_timeout", "error"),
    # ... or cannot reach the store's server at all (rendezvous endpoint or MASTER_ADDR down, unreachable or refusing):
    # torch <= 1.13 raised a RuntimeError for it, later ones a DistNetworkError; both quoted in elastic's error JSON
    ("store_connect", _STORE_CONNECT, "network", "error"),
    ("store_bind", _torch_exceptions.STORE_BIND, "user_code_error", "error"),
    ("rendezvous_lost", _torch_exceptions.RENDEZVOUS_LOST, "node_failure", "warning"),
    ("driver_too_old", _torch_exceptions.DRIVER_TOO_OLD, "user_code_error", "error"),
    # gloo's group setup could not connect its ranks to one another: the hosts cannot reach each other on that interface
    ("gloo_connect", r"Gloo connectFullMesh failed with", "network", "error"),
    ("dump_signal", r"Received a dump signal due to a collective timeout|Observed flight recorder dump signal",
     "nccl_timeout", "warning"),
    # c10d's store client losing its server (`[c10d] recvValue failed on SocketImpl(fd=.., addr=[..]:.., remote=[H]:
    # 29500): Connection reset by peer`, the flight recorder's `Failed to check the "should dump" flag on TCPStore`):
    # the store's host or process went away. No mode of its own (a rank 0 that raised takes its store down too): it
    # dates the loss that a late verdict names (diagnose.onsets.node_loss_onsets)
    ("store_lost", r"\[c10d\] (?:recvValue|recvBytes|sendBytes) failed on SocketImpl|flag on TCPStore, \(maybe "
     r"TCPStore server", None, "warning"),
    # TORCH_NCCL_DESYNC_DEBUG: the lines that name the lagging ranks, and the report's other lines
    ("desync_lagging", r"didn't finish collective #|but didn't join collective #|are the lagging ranks that caused",
     "nccl_timeout", "error"),
    ("desync_report", r"^\s*- \[\d+\] Timeout at collective: |ranks that caused the desync are", "nccl_timeout",
     "warning"),
    # The watchdog tears the process down after a timeout (or an error: a more specific cause then outranks it).
    ("nccl_ops_failed", r"Some NCCL operations have failed or timed out", "nccl_timeout", "error"),
    ("process_teardown", r"To avoid data inconsistency, we are taking the entire process down", "nccl_timeout",
     "error"),
    # A worker that died of SIGBUS ran out of shared memory (/dev/shm is host memory); SIGKILL is the OOM killer.
    # A tensor handed between processes lives in /dev/shm (`</torch_N_M>`): full, writing it fails with ENOSPC.
    ("dataloader_shm", r"DataLoader worker \(pid \d+\) is killed by signal: Bus error|Unexpected bus error "
     r"encountered in worker|unable to write to file </torch_\d+", "host_oom", "error"),
    ("dataloader_killed", r"DataLoader worker \(pid \d+\) is killed by signal: Killed", "host_oom", "error"),
    ("dataloader_died", r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly|DataLoader worker \(pid \d+\) is "
     r"killed by signal", "unknown", "error"),
    ("watchdog_status", r"detected by watchdog at work|Timeout at NCCL work: ", None, "error"),
    # NOTE: a full disk or quota wherever the line words it (behind a workflow tool's own prefix, inside a writer's
    # Rust error `IoError(Os { code: 28, kind: StorageFull, ... })`), not only as a Python exception's message
    ("storage_full", _torch_exceptions.STORAGE_FULL, "filesystem_io", "error"),
    # cuBLAS / cuDNN that cannot allocate their workspace: the GPU is full as surely as with the allocator's OOM
    # ... and torch's own class for it named without that message (DataParallel's re-raise: `torch.cuda.
    # OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.`), wherever the line prints it
    ("cuda_oom", r"CUDA out of memory|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED"
     r"|HIP out of memory|torch\.(?:cuda\.)?OutOfMemoryError: ", "cuda_oom", "error"),
    ("cuda_error", _CUDA_ERR, None, "error"),
    # a kernel's own assertion, printed by each failing GPU thread before torch raises `device-side assert triggered`
    # (`.../Indexing.cu:1141: indexSelectLargeIndex: block: [118,0,0], thread: [96,0,0] Assertion `srcIndex <
    # srcSelectDimSize` failed.`, THC's `THCTensorIndex.cu:272: ...` before torch 1.8): an index out of range
    ("device_assert", _DEVICE_ASSERT, "cuda_error", "error"),
    ("nccl_detail", r"^\s*nccl[A-Z]\w*Error: |^\s*Unknown NCCL error", None, "error"),
    ("nccl_error", r"NCCL [Ee]rror\b", None, "error"),
    # A worker (or the agent) that died: a failure whose cause, if any, another line states.
    ("worker_failed", r"failed \(exitcode: -?\d+\) local_rank: ", "unknown", "error"),
    # the same, as another launcher reports it: its exit code gives the mode where nothing else does (exit_modes)
    ("launcher_exit", exits.LAUNCHER_EXIT, "unknown", "error"),
    # NOTE: a node joining (the operator's replacement pod) restarts every agent's workers too, counted or not
    ("worker_group_restart", r"attempts left; will restart worker group|new nodes from group_rank=\d+; will restart "
     r"worker group", None, "warning"),
    # torchelastic (LOGLEVEL=INFO) launching a worker group: where a restarted attempt's workers begin
    ("worker_group_start", r"\] Starting worker group\s*$", None, "info"),
    ("agent_signal", r"death signal, shutting down workers", "unknown", "warning"),
    # NOTE: a worker that ignored the agent's SIGTERM and had to be SIGKILLed was wedged: no mode of its own (its host,
    # known after the ingest, makes it a suspect of a hang: diagnose.stopped_first)
    ("worker_unkillable", r"Unable to shutdown process \d+ via (?:Signals\.)?SIGTERM", None, "warning"),
    # pdsh (the DeepSpeed launcher's multinode runner) answering a Ctrl-C: a person stopping the launch by hand
    ("launcher_interrupt", _PDSH_INTERRUPT, "manual_stop", "warning"),
    ("process_abort", r"terminate called after throwing an instance of", None, "critical"),
]
_CONTENT_MODE_KINDS = ("watchdog_terminated", "comm_aborted", "cuda_error", "nccl_detail", "nccl_error")
_SIGNAMES = {str(s.value): s.name for s in signal.Signals}
_GIB = {"bytes": 1 / 2**30, "B": 1 / 2**30, "KiB": 1 / 2**20, "MiB": 1 / 2**10, "GiB": 1.0, "TiB": 1024.0}
_DETAIL = [
    "task", "local_rank", "src", "pg_id", "pg_desc", "pg_rank", "seq_num", "op_type", "numel_in", "numel_out",
    "timeout_ms", "ran_for_ms", "last_enqueued", "last_completed", "heartbeat_timeout_s", "nccl_error",
    "nccl_result", "nccl_version", "nccl_src", "cuda_error", "gpu", "tried_gib", "total_gib", "free_gib",
    "process_gib", "allocated_gib", "reserved_gib", "reserved_unallocated_gib", "exitcode", "signal", "pid",
    "binary", "role", "state", "attempts_left", "max_restarts", "abort_exception", "exception", "message", "causes",
    "timeout_from_rank", "desync_seq", "desync_op", "lagging_ranks"]
# A signal a person sends (Ctrl-C, closing the terminal) ends a run by hand; others (SIGTERM) say nothing of who.
_MANUAL_SIGNALS = ("SIGINT", "SIGHUP")
FILE_YEAR_COLUMNS = True  # parsed with other files, the lines carry their file's year context (`_base.yearless`)


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: logs agreeing on it may be parsed together (clusterlab.ingest.groups_text)."""
    return (ctx.tz, ctx.proc_tz, ctx.known_hosts)  # (a file's year comes with its lines: FILE_YEAR_COLUMNS)


def sniff(head: bytes, path: str) -> bool:
    """PyTorch distributed, CUDA or torchrun output in the head of the file."""
    return _SNIFF.search(head) is not None


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events for watchdog, elastic, CUDA, NCCL and traceback lines; child-failure summaries by adjacency."""
    out = Parsed()
    f = _fields(lines, ctx)
    finals, unpaired = _torch_exceptions.tracebacks(f)
    children, child_tbs, bad_entries = _torch_summary.children(f, finals, ctx, _content_mode)
    in_summary = finals.filter(pl.col("tb_line").is_in(child_tbs))["line"].implode()
    finals = finals.filter(~pl.col("tb_line").is_in(child_tbs))
    # The exception inside a summary belongs to its child_failed event, not to an event of its own.
    content = f.filter(pl.col("kind").is_not_null() & ~pl.col("line").is_in(in_summary))
    events = pl.concat([_torch_exceptions.with_exceptions(content, finals),
                        _torch_exceptions.exception_events(f, finals)], how="diagonal_relaxed")
    events = _fold_nccl_detail(events)
    # NOTE: an exit nothing explains takes the mode the exit implies after ingest, over the whole file
    # (clusterlab.ingest.exit_modes): the other lines that may explain it can lie in another batch
    if events.height:
        # NOTE: an event that names only its rank gets its host after ingest (attempts._hosts_of_ranks), from
        # NCCL's rank map or a torchrun summary anywhere in the run: here it would depend on the batch it fell in
        # NOTE: the node that relayed a line (pdsh's `<node>: `) or printed it (ft_launcher's header) is the line's
        # own word, whatever the batch; a desync report's lagging-rank line is about the rank it names, not that node
        relays = f.select("line", host=pl.coalesce("relay_host", "pyhost"))
        events = events.with_columns(_about_other=pl.col("kind") == "desync_lagging")
        events = events.drop("host", strict=False).join(relays, on="line", how="left").with_columns(
            host=pl.when(~pl.col("_about_other").fill_null(False)).then(pl.col("host")))
        out.add("events", events.sort("line").select(
            "line", "ts", "host", "kind", "failure_mode", "severity", "rank", "text",
            _torch_summary.detail(events, _DETAIL).alias("detail"),
            # the line that ends a traceback is printed as its process dies: dated by the exit (`parse._fill_ts`)
            pl.col("exception").is_not_null().alias(AT_EXIT),
        ))
    out.add("events", children)
    # A launcher start anchors the attempt in time (and gives the lines after it a clock).
    out.add("facts", f.filter(pl.col("msg").str.contains(_START)).select(
        "line", "ts", key=pl.lit("launcher_start"), value=pl.lit("torchrun")))
    out.add("facts", f.filter(pl.col("rest").str.contains(_DS_START)).select(
        "line", "ts", key=pl.lit("launcher_start"), value=pl.lit("deepspeed")))
    out.add("facts", f.filter(pl.col("rest").str.contains(_DS_END)).select(
        "line", "ts", key=pl.lit("launcher_end"), value=pl.lit("deepspeed")))
    # by number, not only counted: files parsed together get their own counts (clusterlab.ingest.groups_text)
    out.unparsed_lines = pl.concat([unpaired, bad_entries]).sort()
    out.unparsed = len(out.unparsed_lines)
    return out


def _fields(lines: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Launcher prefix, log header, time, content kind and the parsed fields of every matched line."""
    relay = pl.col("text").str.extract(_RELAY, 1)
    relay_host = pl.when(relay.is_in(sorted(ctx.known_hosts))).then(relay) if ctx.known_hosts else pl.lit(None)
    f = lines.with_columns(relay_host=relay_host.cast(pl.String))
    relayed = pl.when(pl.col("relay_host").is_not_null()).then(pl.col("text").str.replace(_RELAY, "")) \
        .otherwise(pl.col("text"))
    f = f.with_columns(relayed.str.extract_groups(_LAUNCHER).alias("p")).unnest("p")
    rest = pl.col("rest")
    f = f.with_columns(
        rest.str.extract_groups(_GLOG).alias("g"), rest.str.extract_groups(_PYLOG).alias("y"),
        pl.when(rest.str.contains(_FIELD_LINE)).then(rest.str.extract_groups(_FIELD)).alias("c"),
        omsg=rest.str.extract(_OLDLOG, 1),
    ).unnest("g", "y", "c")
    # NOTE: torchrun's agent logs a child's traceback behind its glog header, one line each
    # (`E0228 00:35:58.954000 7248 .../api.py:732] Traceback (most recent call last):`): read behind the header
    body = pl.coalesce("gmsg", "rest")
    f = f.with_columns(body.str.extract_groups(_EXC).alias("e")).unnest("e")
    # c10 logging prints month*100+day unpadded (`E219` is 19 February); glog pads it (`E0219`).
    md = pl.col("md").cast(pl.Int32, strict=False)
    glog = pl.concat_str([year_of(ctx), pl.lit("-"), (md // 100).cast(pl.String).str.zfill(2), pl.lit("-"),
                          (md % 100).cast(pl.String).str.zfill(2), pl.lit(" "), pl.col("hms")])
    py = pl.when(pl.col("pyts").is_not_null()).then(pl.format("{}.{}", "pyts", "ms"))
    as_time = {"time_unit": "us", "strict": False}
    stamp = pl.coalesce(yearless(glog.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", **as_time), ctx),
                        py.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", **as_time))
    # `what():` repeats a watchdog message already logged; NCCL's own lines belong to the nccl collector.
    # NOTE: only where the watchdog's own line came before it: an excerpt that kept only the abort (`terminate
    # called ...` and its `what():`) has no other line that says the collective timed out
    watchdog = rest.str.contains(r"watchdog thread terminated|Watchdog caught")
    what = rest.str.contains(r"^\s*what\(\):")
    # NOTE: per file: many small logs may be parsed as one batch (clusterlab.ingest.groups_text)
    logged_before = (watchdog & ~what).cast(pl.Int8).cum_max().shift(1, fill_value=0).over(file_of_line()) > 0
    drop = (what & watchdog & logged_before) | rest.str.contains(r"NCCL (?:INFO|WARN|TRACE) ")
    frame = body.str.contains(_FRAME)
    header = body.str.contains(_TB_START)
    headed = header.cast(pl.Int8).cum_max().shift(1, fill_value=0).over(file_of_line()) > 0  # (a header before it)
    f = f.with_columns(
        msg=pl.coalesce("gmsg", "pmsg", "omsg", "rest"),
        ts=local_to_utc(stamp, ctx.proc_tz or ctx.tz),
        is_tb=header | (frame & (pl.col("line") % FILE_LINE_BASE <= _CUT_TB_LINES) & ~headed),
        is_chain=body.str.contains(_CHAIN), rank_tb=body.str.contains(_RANK_TB),
        header=pl.when(rest.str.contains(r"^Root Cause(?: \(first observed failure\))?:\s*$")).then(pl.lit("root"))
        .when(rest.str.contains(r"^(?:Other )?Failures:\s*$")).then(pl.lit("others")),
        exc_type=pl.when(~drop).then(pl.col("exc_type")),
        # the stream a line belongs to (file, launcher prefix; then indentation): tracebacks, chains and summaries
        # are read within one
        key=pl.concat_str([file_of_line().cast(pl.String), pl.lit("|"), pl.col("relay_host").fill_null(""), pl.lit("|"),
                           pl.col("pfx").str.strip_chars(), pl.lit("|"),
                           # (a frame sits two spaces in from its traceback: one where a prefix ate one, `[0]:`)
                           pl.when(frame).then(body.str.extract(r"^(\s*?)  ?File ", 1))
                           .otherwise(body.str.extract(r"^(\s*)", 1))]),
        drop=drop, is_frame=frame,
    )
    # (a frame line is read only as where a headless traceback begins)
    content = ~pl.col("drop") & pl.col("field").is_null() & pl.col("header").is_null() & ~pl.col("is_frame")
    # NOTE: a kind and a message's fields only where an event can come from (a line of content, an exception):
    # a summary's field lines, half of a torchrun failure's lines, skip the ~80 regexes (the others' are unread)
    f = f.with_row_index("_i")
    event = content | pl.col("exc_type").is_not_null()
    part, other = f.filter(event), f.filter(~event)
    part = _kinds(part, content)
    other = other.with_columns(pl.col("task").cast(pl.Int32, strict=False))
    return pl.concat([part, other], how="diagonal_relaxed").sort("_i").drop("_i")


def _kinds(f: pl.DataFrame, content: pl.Expr) -> pl.DataFrame:
    """The content kind, failure mode and severity of each line (a kind only on `content` lines), and the fields
    its message carries."""
    # NOTE: the literals the kinds' and fields' regexes need, found in one scan: a regex none of the batch's lines
    # can match is not run (each costs a compilation, ~0.1-1 ms, and polars keeps few compiled patterns)
    found = _present(f)
    kinds = [k for k in _KINDS if not found.isdisjoint(lits.KIND_LITS[k[0]])]
    kind, mode, severity = first_kind(pl.col("msg"), kinds)
    f = f.with_columns(kind=pl.when(content).then(kind), severity=severity, mode=mode)
    modes = f.height > 0 and bool(f["kind"].is_in(_CONTENT_MODE_KINDS).any())
    f = f.with_columns(
        failure_mode=pl.when(pl.col("kind").is_in(_CONTENT_MODE_KINDS)).then(
            _content_mode(pl.col("msg")) if modes else pl.lit(None, pl.String))
        .when(pl.col("kind").is_not_null()).then(pl.col("mode")),
    )
    f = _message_fields(f, found)
    manual = (pl.col("kind") == "agent_signal") & pl.col("signal").is_in(_MANUAL_SIGNALS)
    return f.with_columns(failure_mode=pl.when(manual).then(pl.lit("manual_stop")).otherwise(pl.col("failure_mode")))


def _present(f: pl.DataFrame) -> set[str]:
    """Which of `lits.LITS` the lines' messages hold (all of them: each regex runs)."""
    if not f.height:
        return set()
    found = f.select(pl.col("msg").str.extract_many(lits.LITS, overlapping=True).explode().unique().drop_nulls())
    return set(found.to_series().to_list())


def _content_mode(t: pl.Expr) -> pl.Expr:
    """The failure mode a message names: a collective timeout, a CUDA error, an NCCL error."""
    return (
        pl.when(t.str.contains(_TIMEOUT)).then(pl.lit("nccl_timeout"))
        .when(t.str.contains(r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError")).then(pl.lit("cuda_oom"))
        .when(t.str.contains(_CUDA_ERR)).then(cuda_mode(t.str.extract(_CUDA_ERR + r"(.*)", 1)))
        # NOTE: ncclSystemError is a failed system call, in practice a socket to a peer that cannot be reached
        # (a node whose network is broken); only its "Last error:" line could say more
        .when(t.str.contains(r"remote process exited|network error|ncclRemoteError|unhandled system error"
                             r"|ncclSystemError")).then(pl.lit("network"))
        .when(t.str.contains(r"unhandled cuda error|ncclUnhandledCudaError")).then(pl.lit("cuda_error"))
        .when(t.str.contains(r"invalid (?:usage|argument)|ncclInvalid")).then(pl.lit("user_code_error"))
        .when(t.str.contains(r"NCCL [Ee]rror.*\btime(?:out|d out)")).then(pl.lit("nccl_timeout"))
        # NCCL failed and does not say why (its "Last error:" line, read by the nccl collector, may)
        .when(t.str.contains(r"internal check failed|ncclInternalError"))
        .then(pl.lit("unknown"))
        # an NCCL error whose reason is none of the above (`NCCL Error 3: internal error`) still failed the job
        .when(t.str.contains(r"NCCL [Ee]rror|nccl[A-Z]\w*Error")).then(pl.lit("unknown"))
        # torch 1.7-1.10 aborted a communicator with no reason given only when its watchdog saw a timeout
        .when(t.str.contains(r"NCCL communicator was aborted")).then(pl.lit("nccl_timeout"))
    )


def _num(rx: str, dtype: pl.DataType = pl.Int64) -> pl.Expr:
    """The number the regex's first group captures in the message."""
    return pl.col("msg").str.extract(rx, 1).cast(dtype, strict=False)


def _gib(rx: str) -> pl.Expr:
    """A `<value> <unit>` size the regex's two groups capture, in GiB."""
    value = pl.col("msg").str.extract(rx, 1).cast(pl.Float64, strict=False)
    unit = pl.col("msg").str.extract(rx, 2).replace_strict(_GIB, default=None, return_dtype=pl.Float64)
    return (value * unit).round(4)


def _message_fields(f: pl.DataFrame, found: set[str]) -> pl.DataFrame:
    """The numbers and names each kind of message carries (extracts hit only the lines that carry them; `found`:
    which of `lits.FIELD_LITS` the messages hold)."""
    m = pl.col("msg")
    lagging = f.height > 0 and bool((f["kind"] == "desync_lagging").any())

    def has(*lits: str) -> bool:
        return not found.isdisjoint(lits)

    def num(lit: str | tuple[str, ...], rx: str, dtype: pl.DataType = pl.Int64) -> pl.Expr:
        return _num(rx, dtype) if has(*((lit,) if isinstance(lit, str) else lit)) else pl.lit(None, dtype)

    def text(lit: str | tuple[str, ...], rx: str) -> pl.Expr:
        return m.str.extract(rx, 1) if has(*((lit,) if isinstance(lit, str) else lit)) else pl.lit(None, pl.String)

    def gib(lit: str | tuple[str, ...], rx: str) -> pl.Expr:
        return _gib(rx) if has(*((lit,) if isinstance(lit, str) else lit)) else pl.lit(None, pl.Float64)

    pg = r"\[PG (?:ID )?(\d+) (?:PG GUID \S+? |\([^)]*\) )?Rank \d+\]"
    pg_rank = num("Rank ", r"\[(?:PG [^\]]*?)?Rank (\d+)\]", pl.Int32)
    return f.with_columns(
        task=pl.col("task").cast(pl.Int32, strict=False), local_rank=pl.coalesce(
            pl.col("plocal").cast(pl.Int32, strict=False), num("local_rank: ", r"local_rank: (\d+)", pl.Int32)),
        pg_id=num("[PG ", pg, pl.Int32), pg_desc=text("[PG ", r"\[PG (?:ID )?\d+ (?:PG GUID \d+)? ?\(([^)]*)\) Rank"),
        pg_rank=pg_rank,
        seq_num=pl.coalesce(num("SeqNum=", r"SeqNum=(\d+)"),
                            num("watchdog at work", r"watchdog at work(?: sequence id)?: (\d+)"),
                            num("NCCL work: ", r"NCCL work: (\d+)")),
        op_type=text("OpType=", r"OpType=(\w+)"), numel_in=num("NumelIn=", r"NumelIn=(\d+)"),
        numel_out=num("NumelOut=", r"NumelOut=(\d+)"), timeout_ms=num("Timeout(ms)=", r"Timeout\(ms\)=(\d+)"),
        ran_for_ms=num("ran for ", r"ran for (\d+) milliseconds"),
        last_enqueued=num("last enqueued ", r"last enqueued (?:NCCL )?work: (-?\d+)"),
        last_completed=num("last completed ", r"last completed (?:NCCL )?work: (-?\d+)"),
        heartbeat_timeout_s=num("got stuck for ", r"got stuck for (\d+) seconds"),
        nccl_error=text(("NCCL Error", "NCCL error"),
                        r"NCCL [Ee]rror(?: \d+)?(?: in: [^,]+,|:)? ?([^,]+?)(?:, NCCL version \S+)?\s*$"),
        nccl_version=text("NCCL version ", r"NCCL version (\S+)"),
        nccl_src=text("rror in: ", r"NCCL [Ee]rror in: ([^,]+),"),
        nccl_result=text("Error:", r"^\s*(nccl[A-Z]\w*Error):"),
        cuda_error=text(lits.CUDA_LITS, _CUDA_ERR + r"(.+?)(?: at \S+:\d+)?\s*$"),
        gpu=pl.coalesce(num(". GPU ", r"\. GPU (\d+) has a total", pl.Int32), num("(GPU ", r"\(GPU (\d+); ", pl.Int32)),
        tried_gib=gib("Tried to allocate ", r"Tried to allocate ([\d.]+) (\w+)"),
        total_gib=gib(("total capac", "GPU "), r"(?:total capaci?ty of|GPU \d+; ) ?([\d.]+) (\w+)"),
        free_gib=gib("free", r"(?:of which|already allocated; ) ?([\d.]+) (\w+) (?:is )?free"),
        process_gib=gib(" memory in use", r"(?:this process|Process \d+) has ([\d.]+) (\w+) memory in use"),
        allocated_gib=gib(("Of the allocated memory", "capacity;"),
                          r"(?:Of the allocated memory|capacity;) ([\d.]+) (\w+) (?:is allocated|already)"),
        reserved_gib=gib("reserved in total by PyTorch", r"([\d.]+) (\w+) reserved in total by PyTorch"),
        reserved_unallocated_gib=gib("is reserved by PyTorch but unallocated",
                                     r"and ([\d.]+) (\w+) is reserved by PyTorch but unallocated"),
        exitcode=pl.coalesce(num("failed (exitcode: ", r"failed \(exitcode: (-?\d+)\)", pl.Int32),
                             num(exits.EXIT_LITS, r"(?:exits with return code =|exit code|exit status) (-?\d+)",
                                 pl.Int32),
                             -num(exits.EXIT_LITS, exits.SIGNAL_NUMBER, pl.Int32),
                             pl.when(m.str.contains(exits.SHELL_KILLED)).then(m.str.extract(exits.SIG_AT, 1))
                             .replace_strict(exits.SIG_WORDS, default=None, return_dtype=pl.Int32)
                             if has(*exits.SIG_LITS) else pl.lit(None, pl.Int32),
                             text(exits.EXIT_LITS, r"terminated with signal (SIG\w+)").replace_strict(
                                 exits.SIGNAL_EXITS, default=None, return_dtype=pl.Int32)),
        pid=num(") of binary", r"\(pid: (\d+)\) of binary"),
        binary=text("of binary: ", r"of binary: (.+)$"),
        role=text("] Worker group", r"\[(\w+)\] Worker group"), state=text("Worker group ", r"Worker group (\w+)\."),
        attempts_left=num(" attempts left", r"(\d+)/\d+ attempts left", pl.Int32),
        max_restarts=num(" attempts left", r"\d+/(\d+) attempts left", pl.Int32),
        signal=m.str.extract(r"Received (\S+) death signal", 1).str.strip_prefix("Signals.").replace(_SIGNAMES)
        if has(" death signal") else pl.lit(None, pl.String),
        abort_exception=text("instance of '", r"instance of '([^']+)'"),
        timeout_from_rank=num("collective timeout from ", r"collective timeout from +rank (\d+)", pl.Int32),
        desync_seq=num("Timeout at collective: ", r"Timeout at collective: \w+, #(\d+)"),
        desync_op=text("Timeout at collective: ", r"Timeout at collective: (\w+)"),
        lagging_ranks=pl.when(pl.col("kind") == "desync_lagging").then(m.str.extract(r"\[([\d, ]+)\]", 1))
        if lagging else pl.lit(None, pl.String),
        rank=pl.coalesce(
            # a desync report's line is about the lagging rank it names, not the rank that prints it
            pl.when(pl.col("kind") == "desync_lagging").then(_num(r"\[(\d+)\]", pl.Int32))
            if lagging else pl.lit(None, pl.Int32),
            pl.col("prank").cast(pl.Int32, strict=False), pl.col("mrank").cast(pl.Int32, strict=False),
            pl.when(num("[PG ", pg, pl.Int32).fill_null(0) == 0).then(pg_rank)),
    )


def _fold_nccl_detail(events: pl.DataFrame) -> pl.DataFrame:
    """`ncclRemoteError: ...` lines explain the NCCL error one or two lines above: fold them into it."""
    if not events.height or not (events["kind"] == "nccl_detail").any():
        return events
    events = events.sort("line")
    det = events.filter(pl.col("kind") == "nccl_detail").select(
        "line", pl.col("nccl_result").alias("d_result"), pl.col("failure_mode").alias("d_mode"))
    base = events.filter(pl.col("kind").is_in(["nccl_error", "watchdog_terminated", "comm_aborted"])).select(
        pl.col("line").alias("target"))
    folded = (det.join_asof(base, left_on="line", right_on="target", strategy="backward", tolerance=2)
              .filter(pl.col("target").is_not_null()).unique("target", keep="first"))
    events = events.join(folded.select(pl.col("target").alias("line"), "d_result", "d_mode"), on="line", how="left")
    return events.filter(~pl.col("line").is_in(folded["line"].implode())).with_columns(
        nccl_result=pl.coalesce("nccl_result", "d_result"),
        failure_mode=pl.coalesce("failure_mode", "d_mode"),
        kind=pl.when(pl.col("kind") == "nccl_detail").then(pl.lit("nccl_error")).otherwise(pl.col("kind")),
    ).drop("d_result", "d_mode")

