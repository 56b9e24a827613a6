"""The literals the torch collector's regexes cannot match without: a regex none of a batch's lines can match (none
holds one of its literals) is not run (each costs a compilation, ~0.1-1 ms, and polars keeps few compiled patterns)."""

from __future__ import annotations

from clusterlab.collectors._torch_exceptions import RENDEZVOUS_LOST
from clusterlab.collectors._torch_exits import EXIT_LITS

# What each field's regex cannot match without (literals of `_message_fields`' patterns): a field whose literals no
# line of the batch holds is null without its regex (each costs a compilation, and polars keeps few compiled)
CUDA_LITS = ("CUDA error: ", "CUDA driver error: ", "cuda runtime error (", "THCudaCheck FAIL", "cudaError",
             "CUDA_ERROR_", "Triton Error [CUDA]: ", "blas runtime error : ", "dnn runtime error : ",
             "BLAS failure ", "DNN failure ", "_STATUS_SUCCESS (", "uDNN error: ", "udnn error: ")
FIELD_LITS = ("local_rank: ", "[PG ", "Rank ", "SeqNum=", "watchdog at work", "NCCL work: ", "OpType=", "NumelIn=",
              "NumelOut=", "Timeout(ms)=", "ran for ", "last enqueued ", "last completed ", "got stuck for ",
              "NCCL Error", "NCCL error", "NCCL version ", "rror in: ", "Error:", *CUDA_LITS, ". GPU ", "(GPU ",
              "Tried to allocate ", "total capac", "GPU ", "free", " memory in use", "Of the allocated memory",
              "capacity;", "reserved in total by PyTorch", "is reserved by PyTorch but unallocated",
              "failed (exitcode: ", ") of binary", "of binary: ", "] Worker group", "Worker group ", " attempts left",
              " death signal", "instance of '", "collective timeout from ", "Timeout at collective: ")

# What each kind's regex cannot match without (`torch_dist._KINDS`)
KIND_LITS: dict[str, tuple[str, ...]] = {
    "watchdog_terminated": ("watchdog thread terminated with exception",),
    "comm_aborted": ("NCCL communicator was aborted",),
    "watchdog_timeout": ("ollective operation timeout", "timed out in ", "Timed out waiting ",
                         "Watchdog caught collective", " milliseconds before timing out", "monitoredBarrier"),
    "heartbeat_timeout": ("Heartbeat monitor timed out", "watchdog got stuck for"),
    "timeout_notified": ("Received a global timeout from another rank",),
    "store_timeout": ("via c10d key-value store by key ", "Timed out initializing process group in store based"),
    "store_connect": ("connect() timed out. Original timeout was ", "while trying to connect"),
    "store_bind": ("The server socket has failed to listen on any local network address",),
    "rendezvous_lost": (RENDEZVOUS_LOST,),  # (a literal)
    "driver_too_old": ("The NVIDIA driver on your system is too old",),
    "gloo_connect": ("Gloo connectFullMesh failed with",),
    "dump_signal": ("Received a dump signal due to a collective timeout", "Observed flight recorder dump signal"),
    "store_lost": ("] recvValue failed on SocketImpl", "] recvBytes failed on SocketImpl",
                   "] sendBytes failed on SocketImpl", "flag on TCPStore, (maybe TCPStore server"),
    "desync_lagging": ("didn't finish collective #", "but didn't join collective #",
                       "are the lagging ranks that caused"),
    "desync_report": ("] Timeout at collective: ", "ranks that caused the desync are"),
    "nccl_ops_failed": ("Some NCCL operations have failed or timed out",),
    "process_teardown": ("To avoid data inconsistency, we are taking the entire process down",),
    "dataloader_shm": ("is killed by signal: Bus error", "Unexpected bus error encountered in worker",
                       "unable to write to file </torch_"),
    "dataloader_killed": ("is killed by signal: Killed",),
    "dataloader_died": ("DataLoader worker (pid",),
    "watchdog_status": ("detected by watchdog at work", "Timeout at NCCL work: "),
    "storage_full": ("No space left on device", "Disk quota exceeded"),
    "cuda_oom": ("CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
                 "CUDNN_STATUS_ALLOC_FAILED", "HIP out of memory", "OutOfMemoryError: "),
    "cuda_error": CUDA_LITS,
    "device_assert": ("], thread: [",),
    "nccl_detail": ("Error: ", "Unknown NCCL error"),
    "nccl_error": ("NCCL Error", "NCCL error"),
    "worker_failed": ("failed (exitcode: ",),
    "launcher_exit": EXIT_LITS,
    "worker_group_restart": ("attempts left; will restart worker group", "; will restart worker group"),
    "worker_group_start": ("] Starting worker group",),
    "agent_signal": ("death signal, shutting down workers",),
    "worker_unkillable": ("Unable to shutdown process ",),
    "launcher_interrupt": (": interrupt (one more within 1 sec to abort)",),
    "process_abort": ("terminate called after throwing an instance of",),
}
LITS = sorted({*FIELD_LITS, *(x for lits in KIND_LITS.values() for x in lits)})
