"""Python tracebacks in a torch job's output: the exception that ends each one, its chained causes, and its mode.

Split from `torch_dist` (one collector, two modules): `tracebacks` pairs each `Traceback (most recent call last):`
with the exception line that ends it (a CheckpointException's ranks' tracebacks folded in as its causes),
`exception_events` gives the ones no content kind covers a `python_exception` event whose mode is its root-most
specific cause's (a stale NFS handle under a RuntimeError is `filesystem_io`), ordinary exceptions the user's code.
"""

from __future__ import annotations

import bisect

import polars as pl

from clusterlab.collectors._base import FILE_LINE_BASE

_TB_MAX_LINES = 1000  # a traceback whose exception line is further away than this is not paired
# c10d's store: a rank waited for a key another rank never wrote (rank 0's ncclUniqueId, a barrier's count) until the
# store's timeout (torch 1.12+ "Socket Timeout", "Timeout waiting for key: ...", 2.5+ "wait timeout after 600000ms";
# before 2.2 the store-based barrier's own "Timed out initializing process group in store based barrier")
# torchelastic's agent that cannot reach the rendezvous's backend for its keep-alive (`The node 'gpu-b02_18842_0' has
# failed to send a keep-alive heartbeat to the rendezvous '...' due to an error of type RendezvousConnectionError`):
# the node that serves it (a c10d store on the first node, an etcd) is gone or cut off; not the printing agent's host
RENDEZVOUS_LOST = r"has failed to send a keep-alive heartbeat to the rendezvous"
STORE_TIMEOUT = (r"via c10d key-value store by key .* got error: (?:Socket Timeout|Timeout waiting for key"
                 r"|wait timeout after)|Timed out initializing process group in store based barrier")
# torch built for a newer CUDA than the node's driver serves (`The NVIDIA driver on your system is too old (found
# version 11040)`): the job's image against the node's driver, a configuration to fix, not a fault of the GPU
DRIVER_TOO_OLD = r"The NVIDIA driver on your system is too old \(found version \d+\)"
# a store's server that cannot bind its port: the launch's own configuration, not the network
STORE_BIND = r"The server socket has failed to listen on any local network address"
# Exceptions that wrap or follow another failure: they name no cause of their own.
_NO_MODE_EXC = {"DistStoreError", "DistBackendError", "SignalException", "ProcessExitedException", "SystemExit",
                "ProcessRaisedException", "RendezvousClosedError", "RendezvousError",
                "RendezvousConnectionError", "RendezvousStateError",
                # Ray's: an actor that died (its process or its node: Ray's own lines say which), and Ray Train's
                # "The Ray Train run failed. Please inspect the previous error messages for a cause."
                "ActorDiedError", "RayActorError", "ActorUnavailableError", "TrainingFailedError"}
# EIO, ENOSPC, ESTALE, EDQUOT: the storage, not the code, failed the read or write
# NOTE: torch.save's zip writer names no errno: a short fwrite is 'PytorchStreamWriter failed writing file X:
# file write failed', a short earlier record 'unexpected pos N vs M' (a full disk, a quota, an I/O error)
_FS_ERRNO = (r"\[Errno (?:5|28|116|121|122)\]|Input/output error|Stale file handle|No space left on device"
             r"|Remote I/O error"
             r"|Disk quota exceeded|PytorchStreamWriter failed writing file .*: file write failed"
             r"|inline_container\.cc:\d+\] \. unexpected pos \d+ vs \d+"
             # ENOTCONN on a path: a FUSE mount whose daemon died (gcsfuse, blobfuse, s3fs); on a socket (no path
             # named) it stays the caller's
             r"|\[Errno 107\] Transport endpoint is not connected: '/"
             # ESHUTDOWN on a path: what a Lustre client evicted by its servers returns to the operations in flight
             r"|\[Errno 108\] Cannot send after transport endpoint shutdown: '/")
# An object store failing a transfer on its side (checkpoints saved to or read from S3 or GCS): botocore's error codes
# of the service's own failures (`An error occurred (SlowDown) when calling the PutObject operation`; an AccessDenied
# or NoSuchBucket is the job's configuration, the user's), google-cloud-storage's 5xx on its upload or download URL
# (`503 POST https://storage.googleapis.com/upload/storage/v1/b/...`), or the endpoint unreachable or timing out;
# likewise the Hugging Face Hub a dataset streams from (`429 Client Error: Too Many Requests for url: https://
# huggingface.co/api/datasets/...`, a 5xx, `HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out`)
_OBJECT_STORE = (r"\((?:SlowDown|InternalError|ServiceUnavailable|RequestTimeout|503|500)\) when calling the \w+ "
                r"operation|\b50[0-4] (?:POST|PUT|GET|PATCH) https://(?:storage|www)\.googleapis\.com/(?:upload/)?storage/"
                r"|(?:Could not connect to the endpoint URL|Read timeout on endpoint URL): \"https://[^\"]*\bs3[.-]"
                r"|\b(?:429|50[0-4]) (?:Client|Server) Error: .* for url: https://(?:huggingface\.co|hf\.co)/"
                r"|HTTPSConnectionPool\(host='(?:huggingface\.co|cdn-lfs[\w.-]*)', port=\d+\): Read timed out")
# What Python prints before a traceback the process outlives: an exception it ignored (raised in a `__del__` or a
# callback, often at interpreter shutdown) or one that ended a thread other than the main one (a logger's network
# thread after the run finished). The process goes on: such an exception is no fault of the job's on its own.
BACKGROUND = r"Exception ignored in: |Exception in thread [^:]*:\s*$"
# ENOSPC, EDQUOT as any layer words them (Python's OSError, Rust's io::Error, a shell)
STORAGE_FULL = r"No space left on device|Disk quota exceeded"
# The caching allocator's out-of-memory report asks NVML which processes hold the GPU's memory; where NVML cannot
# list them (a MIG slice, a container) the report's own assert is raised instead of the OOM message
_OOM_REPORT_ASSERT = r"NVML_SUCCESS == r INTERNAL ASSERT FAILED at \S*CUDACachingAllocator\.cpp"
# `loss is nan`, `Loss became NaN`, `loss = inf`: the loss itself, not a term or a check's wording (`nan_to_num`)
_LOSS_NONFINITE = r"(?i)\bloss\b[^.;:]{0,30}?(?:\b(?:is|became|becomes|was) |= ?)(?:nan|inf)\b"
# a framework's own guard on the numbers, not a check of the user's: torch's clip_grad_norm_ refusing a NaN/Inf total
# norm ('The total norm of order 2.0 for gradients from `parameters` is non-finite'), JAX's debug_nans raising where an
# operation first made one ('FloatingPointError: invalid value (nan) encountered in log'; NumPy's seterr names no value)
_NUMERICS_NONFINITE = (r"total norm of order \S+ for gradients from `parameters` is non-finite"
                       r"|invalid value \((?:nan|inf)\) encountered in ")


def tracebacks(f: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """The exception line that ends each traceback (causes of chained ones folded in); the unended ones' lines."""
    tb = f.filter(pl.col("is_tb")).select(pl.col("line").alias("tb_line"), "key", "rank_tb")
    ex = f.filter(pl.col("exc_type").is_not_null()).select("line", "key", "exc_type", "exc_msg")
    schema = {"line": pl.Int64, "tb_line": pl.Int64, "exc_type": pl.String, "exc_msg": pl.String,
              "causes": pl.List(pl.String), "chain_msgs": pl.List(pl.String), "consumed": pl.Boolean,
              "cause_lines": pl.List(pl.Int64)}
    if not tb.height and not ex.height:
        return pl.DataFrame(schema=schema), pl.Series("line", [], pl.Int64)
    pairs = ex.sort("line").join_asof(tb.sort("tb_line"), left_on="line", right_on="tb_line", by="key",
                                      strategy="backward", check_sortedness=False)
    # NOTE: a file that begins with an exception (no traceback header before it) is a quote of a traceback's end:
    # the user kept the error and dropped what led to it. Elsewhere such words are a log line, not an exception.
    orphan = pl.col("tb_line").is_null() & (pl.col("line") % FILE_LINE_BASE == 1)
    pairs = (pairs.with_columns(tb_line=pl.when(orphan).then(pl.col("line")).otherwise(pl.col("tb_line")),
                                rank_tb=pl.col("rank_tb").fill_null(False))
             .filter(pl.col("line") - pl.col("tb_line") <= _TB_MAX_LINES)
             .sort("line").unique("tb_line", keep="first", maintain_order=True))
    marks: dict[str, list[int]] = {}
    for line, key in f.filter(pl.col("is_chain")).select("line", "key").iter_rows():
        marks.setdefault(key, []).append(line)
    rows, by_key = [], {}
    for r in pairs.iter_rows(named=True):  # one per traceback: rare lines
        by_key.setdefault(r["key"], []).append(r)
    for key, seq in by_key.items():
        causes: list[str] = []
        msgs: list[str | None] = []
        ms = marks.get(key, [])
        seq = _fold_rank_failures(seq)
        for cur, nxt in zip(seq, [*seq[1:], None], strict=True):
            # "During handling ..." between this exception and the next traceback: this one is a cause.
            i = bisect.bisect_right(ms, cur["line"])
            chained = nxt is not None and i < len(ms) and ms[i] < nxt["tb_line"]
            mine, their, where = cur.get("rank_causes", ([], [], []))
            rows.append({"line": cur["line"], "tb_line": cur["tb_line"], "exc_type": cur["exc_type"],
                         "exc_msg": cur["exc_msg"], "causes": [*causes, *mine] or None,
                         "chain_msgs": [*msgs, *their, cur["exc_msg"]], "consumed": chained, "cause_lines": where})
            causes, msgs = ([*causes, cur["exc_type"]], [*msgs, cur["exc_msg"]]) if chained else ([], [])
    unended = tb.filter(~pl.col("tb_line").is_in(pairs["tb_line"].implode()))["tb_line"].alias("line")
    return pl.DataFrame(rows, schema=schema), unended


def _fold_rank_failures(seq: list[dict]) -> list[dict]:
    """The tracebacks printed inside an exception's message (a CheckpointException's ranks', a DataLoader worker's
    under torch's re-raise) as its causes: one exception, whose mode is theirs (`OSError: [Errno 5]` on a checkpoint
    filesystem), not one per traceback."""
    out: list[dict] = []
    for r in seq:
        if r["rank_tb"] and out:
            head = out[-1]
            types, msgs, lines = head.setdefault("rank_causes", ([], [], []))
            types.append(r["exc_type"])
            msgs.append(r["exc_msg"])
            lines.append(r["line"])
            continue
        out.append(dict(r))
    return out


def with_exceptions(content: pl.DataFrame, finals: pl.DataFrame) -> pl.DataFrame:
    """Content events, with the exception type (and chained causes) where the line ends a traceback."""
    return content.join(finals.select("line", pl.col("exc_type").alias("exception"), "causes"),
                        on="line", how="left")


def _exc_mode(exc_type: pl.Expr, message: pl.Expr) -> pl.Expr:
    """The failure mode an exception type (and message) names; ordinary exceptions are the user's code."""
    short = exc_type.str.extract(r"(\w+)$", 1)
    return (pl.when(short == "KeyboardInterrupt").then(pl.lit("manual_stop"))
            .when(short == "MemoryError").then(pl.lit("host_oom"))
            # a training loop's own check raising on a non-finite loss (`ValueError: loss is nan`): divergence
            .when(message.fill_null("").str.contains(_LOSS_NONFINITE)).then(pl.lit("loss_divergence"))
            .when(message.fill_null("").str.contains(_NUMERICS_NONFINITE)).then(pl.lit("loss_divergence"))
            .when(message.fill_null("").str.contains(_OOM_REPORT_ASSERT)).then(pl.lit("cuda_oom"))
            # NOTE: whatever wraps it (an OSError, a RuntimeError of torch.save): the storage failed the process
            .when(message.fill_null("").str.contains(_FS_ERRNO)).then(pl.lit("filesystem_io"))
            .when(message.fill_null("").str.contains(_OBJECT_STORE)).then(pl.lit("filesystem_io"))
            # NOTE: a store server that cannot bind its port is the launch's configuration (store_bind), not the network
            .when((short == "DistNetworkError") & ~message.fill_null("").str.contains(STORE_BIND))
            .then(pl.lit("network"))
            # the store's wait for its peers ran out (rendezvous or a barrier on the store): a hang, as a collective's
            .when(short.is_in(["DistStoreError", "DistBackendError"]) & message.fill_null("").str.contains(
                r"Socket Timeout|Timed out after \d+ seconds|[Ww]ait timeout")).then(pl.lit("nccl_timeout"))
            # NOTE: ... as the elastic agent's own wait for the other nodes to join: a peer that never arrived (its
            # node or agent hung or gone), no cause of its own named; the worker group it would form never ran
            .when(short == "RendezvousTimeoutError").then(pl.lit("nccl_timeout"))
            .when(short.is_in(list(_NO_MODE_EXC))).then(pl.lit(None, pl.String))
            # NOTE: gloo's "Connection closed/reset by peer" is what the survivors raise when a peer process
            # died (killed, crashed, OOM): a symptom naming no cause, never the user's code on its own
            .when(message.fill_null("").str.contains(r"pair\.cc:\d+\].*(?:Connection (?:closed|reset) by peer)"))
            .then(pl.lit(None, pl.String))
            .otherwise(pl.lit("user_code_error")))


def exception_events(f: pl.DataFrame, finals: pl.DataFrame) -> pl.DataFrame:
    """A python_exception event for each traceback ending in an exception no content kind covers."""
    plain = finals.filter(~pl.col("consumed") & (pl.col("exc_type").str.extract(r"(\w+)$", 1) != "ChildFailedError"))
    # NOTE: a cause inside the message whose own line is a content event with a mode (a worker's CUDA error under
    # `Caught RuntimeError in pin memory thread`) is that event: the wrapper adds none, least of all the user's code
    told = f.filter(pl.col("kind").is_not_null() & pl.col("failure_mode").is_not_null())["line"].implode()
    plain = plain.filter(~pl.col("cause_lines").list.eval(pl.element().is_in(told)).list.any().fill_null(False))
    # A chain takes the mode of its root-most specific cause (a stale NFS handle under a RuntimeError).
    members = (plain.select("line", pl.concat_list([pl.col("causes").fill_null([]), pl.col("exc_type")]).alias("t"),
                            "chain_msgs")
               .explode(["t", "chain_msgs"]).with_columns(m=_exc_mode(pl.col("t"), pl.col("chain_msgs"))))
    modes = members.group_by("line").agg(
        pl.col("m").filter(pl.col("m").is_not_null() & (pl.col("m") != "user_code_error")).first().alias("specific"),
        pl.col("m").last().alias("own"),
    )
    rows = (f.filter(pl.col("kind").is_null()).join(plain.select("line", "tb_line", "causes"), on="line", how="inner")
            .join(modes, on="line", how="left"))
    # a traceback right after Python's word that the process outlives it (BACKGROUND): a notice, unless its chain
    # names a mode more specific than the user's code (a thread's I/O error on a checkpoint is still the storage's)
    outlived = (pl.col("tb_line") - 1).is_in(f.filter(pl.col("msg").str.contains(BACKGROUND))["line"].implode())
    notice = outlived & pl.col("specific").is_null()
    return rows.with_columns(
        kind=pl.lit("python_exception"), failure_mode=pl.when(~notice).then(pl.coalesce("specific", "own")),
        severity=pl.when(notice).then(pl.lit("warning")).otherwise(pl.lit("error")),
        exception=pl.col("exc_type"), message=pl.col("exc_msg"),
    ).drop("specific", "own", "tb_line")

