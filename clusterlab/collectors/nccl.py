"""NCCL debug output (NCCL_DEBUG=INFO|WARN): the rank map from init lines, network errors from WARN lines.

Line shapes (NCCL src/debug.cc, 2.7 to 2.30):
    host:pid:tid [cudaDev] NCCL INFO msg
    host:pid:tid [cudaDev] file.cc:LINE NCCL WARN msg              (2.7 - 2.29)
    host:pid:tid [cudaDev] file.cc:LINE (func) NCCL WARN msg       (2.30+)
    [2026-11-25 10:15:01] host:pid:tid [cudaDev] ... NCCL WARN msg (2.26+: NCCL_DEBUG_TIMESTAMP_FORMAT,
                                                                    default "[%F %T] ", local time, WARN only)
    host:pid:tid [cudaDev] file.h:LINE WARN msg                    (2.0 - 2.2's debug.h: no "NCCL" word;
                                                                    pasted without its host prefix too)
behind any launcher prefix (`[rank3]:`, `[default3]:`, srun `3: `). The same WARN texts also come back
without the NCCL prefix after "Last error:" in the errors PyTorch raises; those echoes are read too.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import (
    Context,
    Parsed,
    cuda_mode,
    file_of_line,
    first_kind,
    json_detail,
    local_to_utc,
    search,
)

NAME = "nccl"
EXCLUSIVE = False
# Selective on purpose: INFO spam (channels, rings, trees, proxies) dominates real logs and must not match.
PATTERN = (
    r"NCCL WARN "
    r"|NCCL INFO (?:\[Rank \d+\] )?(?:nccl\w+ )?comm 0x[0-9a-f]+ rank \d+ nranks \d+ cudaDev \d+ "
    r"|NCCL INFO NCCL version \d|NCCL INFO Bootstrap ?: Using "
    r"|Got completion from peer |Connection closed by remote peer |: Connect to \S+ failed|Call to ibv_\w+"
    r"|ncclSocket[A-Z]\w*: "
    r"|NET/OFI Request (?:\S+ )?completed with error"
    r"|^\s*(?:\[rank\d+\]: )?Cuda failure (?:\d+ )?'|^\s*Bootstrap ?: no socket interface found"
    r"|NCCL INFO [\w./-]+:\d+ -> [1-9]"
    r"|^(?:[^\s:\[\]]+:\d+:\d+ \[\d+\] )?[\w./-]+\.(?:h|cc|cu):\d+ WARN "
    r"|Test (?:CUDA|NCCL) failure [\w./-]+:\d+ '"
    # the AWS OFI plugin's own logger before it logged through NCCL's (aws-ofi-nccl <= 1.0, its test programs)
    r"|^WARN: Function: \w+ Line: \d+: NET/OFI "
)
# ... whose WARN line is a WARN of NCCL's without NCCL's prefix
_OFI_WARN = "WARN: Function: "
# NCCL 2.0-2.2 printed `host:pid:tid [dev] file:line WARN msg` (no "NCCL" word); users paste it without the host part
_OLD_WARN = r"^(?:[^\s:\[\]]+:\d+:\d+ \[\d+\] )?[\w./-]+\.(?:h|cc|cu):\d+ WARN "

_HEAD = (
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\] ?)?"
    r"(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
    r"(?:(?P<src>[\w./-]+:\d+) (?:\((?P<func>\w+)\) )?)?(?:NCCL )?(?P<level>INFO|WARN) (?P<msg>.*)$"
)
# "Cuda failure 999 'unknown error'" after "Last error:" names the CUDA error behind ncclUnhandledCudaError
# nccl-tests reports the CUDA or NCCL call that failed in its own words: "Test CUDA failure common.cu:334 '<CUDA
# error>'", "Test NCCL failure common.cu:958 '<ncclGetErrorString>'"
_TEST_FAILURE = r"Test (?:CUDA|NCCL) failure [\w./-]+:\d+ '"
# NOTE: with EFA the transport's completion error is the AWS OFI plugin's (`NET/OFI Request completed with error`),
# quoted after "Last error:" as IB's is
# ... and NCCL 2.12+'s socket layer, which names its function (`ncclSocketInit: connecting to address ...`)
_ECHO = (r"Got completion from peer |Connection closed by remote peer |: Connect to \S+ failed|Call to ibv_\w+"
         r"|\bncclSocket[A-Z]\w*: "
         r"|NET/OFI Request (?:\S+ )?completed with error|^\s*Bootstrap ?: no socket interface found"
         rf"|^\s*(?:\[rank\d+\]: )?Cuda failure (?:\d+ )?'|{_TEST_FAILURE}")
# ncclGetErrorString's texts (as "Test NCCL failure" quotes them): the failure mode each names
_NCCL_ERROR_TEXT = [(r"unhandled cuda error", "cuda_error"), (r"network error", "network"),
                    (r"invalid (?:argument|usage)", "user_code_error"), (r"system error|internal error", "unknown")]
# NCCLCHECK's trace of a failed call, "NCCL INFO file.cc:LINE -> RES" (an ncclResult_t), under the WARN that began it
_CHAIN = r"^[\w./-]+:\d+ -> ([1-9])"
# What each ncclResult_t says of a WARN no message rule classifies: 1 ncclUnhandledCudaError, 2 ncclSystemError,
# 3 ncclInternalError, 4 ncclInvalidArgument, 5 ncclInvalidUsage, 6 ncclRemoteError.
_RESULT_MODE = {"1": "cuda_error", "2": "unknown", "3": "unknown", "4": "user_code_error", "5": "user_code_error",
                "6": "network"}
_CHAIN_LINES = 8  # a failed call's trace follows its WARN at once; a later one on the thread is another story
# ... which ends where the failure reaches the caller's group: `group.cc:64 -> 2 [Async thread]` (NCCL 2.9+)
_CHAIN_TOP = r"^[\w./-]+:\d+ -> [1-9] \[Async thread\]\s*$"
_CHAIN_REPEATS = 3  # the same call site failing this often on one thread is a loop of failures, not one trace
# A launcher's `[rankN]:` (torchrun --tee, after srun's `N: `) names the rank of a line without an init line
_PREFIX_RANK = pl.col("text").str.extract(r"^\s*(?:\d+: )?\[rank(\d+)\]:", 1).cast(pl.Int32, strict=False)
_PEER = r"(?:peer|[Cc]onnect to|recv from) ([^\s<>]+)<(\d+)>"
_SNIFF = r"[^\s:\[\]]+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ (?:\(\w+\) )?)?NCCL (?:INFO|WARN) "
# The same, for one short ASCII line: Python's engine matches it in microseconds where a polars call costs a
# fifth of a millisecond. ASCII classes (`re.ASCII`) on an ASCII line are Rust's; a line is short enough that
# backtracking (quadratic here at worst) stays cheap.
_SNIFF_LINE = re.compile(_SNIFF, re.ASCII)
_SHORT_LINE = 4096


def _line_matches(line: bytes) -> bool:
    if len(line) <= _SHORT_LINE and line.isascii():
        return _SNIFF_LINE.search(line.decode("ascii")) is not None
    return search(line, _SNIFF)

# ibv_wc_status codes (verbs.h), for the releases that print only the number.
WC_STATUS = {
    0: "IBV_WC_SUCCESS", 1: "IBV_WC_LOC_LEN_ERR", 2: "IBV_WC_LOC_QP_OP_ERR", 3: "IBV_WC_LOC_EEC_OP_ERR",
    4: "IBV_WC_LOC_PROT_ERR", 5: "IBV_WC_WR_FLUSH_ERR", 6: "IBV_WC_MW_BIND_ERR", 7: "IBV_WC_BAD_RESP_ERR",
    8: "IBV_WC_LOC_ACCESS_ERR", 9: "IBV_WC_REM_INV_REQ_ERR", 10: "IBV_WC_REM_ACCESS_ERR",
    11: "IBV_WC_REM_OP_ERR", 12: "IBV_WC_RETRY_EXC_ERR", 13: "IBV_WC_RNR_RETRY_EXC_ERR",
    14: "IBV_WC_LOC_RDD_VIOL_ERR", 15: "IBV_WC_REM_INV_RD_REQ_ERR", 16: "IBV_WC_REM_ABORT_ERR",
    17: "IBV_WC_INV_EECN_ERR", 18: "IBV_WC_INV_EEC_STATE_ERR", 19: "IBV_WC_FATAL_ERR",
    20: "IBV_WC_RESP_TIMEOUT_ERR", 21: "IBV_WC_GENERAL_ERR",
}

# IB async events that report a state change, not a fault (ibv_event_type_str's words): the subnet manager
# re-registering clients or moving, a GID/LID/P_Key table update, a port coming up. A port error, a catastrophic or
# fatal event, a CQ/QP/WQ error stay network faults.
_BENIGN_ASYNC = (r"async event ?: ?(?:client reregistration|GID table change|LID change|P_Key change|SM change"
                 r"|port active|communication established|send queue drained|path migration successful"
                 r"|SRQ limit reached|last WQE reached)|GID table changed")

# WARN kinds in the order they are tried: (kind, regex on the message, failure mode, severity).
_WARN_KINDS: list[tuple[str, str, str | None, str]] = [
    ("ib_completion_error", r"Got completion (?:from peer \S+ )?with (?:error|status)", "network", "error"),
    # the AWS OFI plugin's (EFA) failed transfer: `NET/OFI Request 0x7f.. completed with error. RC: 21. Error: ...`
    ("ofi_completion_error", r"NET/OFI Request (?:\S+ )?completed with error", "network", "error"),
    ("ibv_error", r"\bibv_\w+(?:\(\))? (?:failed|returned)", "network", "error"),
    ("ib_async_event", r"NET/IB ?: .*(?:async (?:fatal |error )?event|GID table changed)",
     "network", "error"),
    # NCCL_SOCKET_IFNAME (or the host) offering no interface NCCL can bootstrap over: the launch's configuration,
    # the job cannot start; a transport that finds none (`NET/Socket : No usable listening interface`) falls back
    ("bootstrap_no_interface", r"Bootstrap ?: no socket interface found", "user_code_error", "error"),
    ("nccl_warn", r"(?:no|No usable listening|No IP) (?:socket )?interface", None, "warning"),
    ("socket_error", r"Connection (?:closed by remote peer|reset|refused|timed out)|socket\w*: |NET/Socket|"
     r"Connect to \S+ (?:failed|returned)|Net : ", "network", "error"),
    ("proxy_error", r"\[Proxy Service|\[Service thread\] Error|Proxy (?:Progress|Service)", "network", "error"),
    ("comm_abort", r"commReclaim|in abort state|communicator encountered a fatal error", None, "warning"),
    # the SHM transport's segment in /dev/shm: a container's default 64 MB /dev/shm (or none mounted) is too small,
    # or the segment a peer made is gone: the job's own setup (its container, its NCCL), not the fabric
    ("shm_error", r"shared memory segment|posix_fallocate failed|failed to extend /dev/shm", "user_code_error",
     "error"),
    # NVLink SHARP's multicast memory the fabric would not bind (`transport/nvls.cc:379 NCCL WARN Failed to bind
    # NVLink SHARP (NVLS) Multicast memory of size N : CUDA error 401 ...`): the NVLink fabric (its switches, the
    # fabric manager) is not in a state to serve it, whatever CUDA error it came back as
    ("nvls_bind_failed", r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory", "nvlink_error", "error"),
    # NCCL 2.4's check that every rank called the same collective (`init.cc:1247 NCCL WARN Mismatched collective
    # detected, please check your collective calls at and around rank 27`): the program's own calls disagree
    ("collective_mismatch", r"Mismatched collective detected", "user_code_error", "error"),
    ("cuda_failure", r"Cuda failure|Test CUDA failure", "cuda_error", "error"),
    ("nccl_test_failure", r"Test NCCL failure", "unknown", "error"),
]


def GROUP_CONTEXT(ctx: Context) -> tuple:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context: NCCL logs agreeing on it may be parsed together."""
    return (ctx.tz,)


def sniff(head: bytes, path: str) -> bool:
    """NCCL lines (`host:pid:tid [dev] NCCL INFO|WARN`) in the head of the file."""
    # NOTE: a match lies within one line holding "NCCL ": the first few such lines are asked alone (a regex over
    # the whole 64 KiB head cost a third of a millisecond, on every NCCL log), the rest of the head only if needed
    # NOTE: or NCCL's own words behind another prefix (a custom logger's, a masked host) or none: a WARN, an IB error
    return (_prefixed(head) or b"NCCL WARN " in head or b"Got completion from peer " in head
            or b"Test CUDA failure " in head or b"Test NCCL failure " in head
            or (b"WARN: Function: " in head and b"NET/OFI " in head)
            or (b" WARN " in head and search(head.decode("utf-8", "replace").splitlines()[:50], _OLD_WARN)))


def _prefixed(head: bytes) -> bool:
    at = head.find(b"NCCL ")
    for _ in range(4):
        if at < 0:
            return False
        start, end = head.rfind(b"\n", 0, at) + 1, head.find(b"\n", at)
        end = len(head) if end < 0 else end
        if _line_matches(head[start:end]):
            return True
        at = head.find(b"NCCL ", end)
    return at >= 0 and search(head[head.rfind(b"\n", 0, at) + 1:], _SNIFF)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Rank map rows from init lines, events from WARN lines and their echoes, facts from version lines."""
    out = Parsed()
    text = pl.col("text")
    level = (pl.when(text.str.contains("NCCL WARN ", literal=True) | text.str.starts_with(_OFI_WARN)
                     | text.str.contains(_OLD_WARN))
             .then(pl.lit("WARN"))
             .when(text.str.contains("NCCL INFO ", literal=True)).then(pl.lit("INFO")))
    # NOTE: every regex runs on the rows it is for: a filter's `&` evaluates each side on every row, and INFO init
    # lines are nearly all of what PATTERN selects, so the rarer lines' tests come after a split by level
    f = lines.with_columns(level=level)
    info = _info_fields(f.filter(pl.col("level") == "INFO"), ctx)
    other = f.filter(pl.col("level").is_null())
    init = info.filter(pl.col("what").is_not_null() & pl.col("rank").is_not_null() & pl.col("pid").is_not_null())
    ranks = init.filter(pl.col("what").str.starts_with("Init"))
    out.add("nccl_ranks", ranks.select(
        "line", "ts", "host", "pid", "rank", "nranks", "cuda_dev", _bus_id(pl.col("bus"), ranks["bus"]).alias("bus_id"),
        "comm_id",
    ))
    facts = info.filter(pl.col("fact_key").is_not_null() & pl.col("pid").is_not_null())
    if facts.height:
        out.add("facts", _facts(facts))
    aborts = init.filter(pl.col("what") == "Abort COMPLETE")
    if aborts.height:  # NOTE: most batches have none, and building the empty frame's JSON costs milliseconds
        out.add("events", _aborts(aborts.with_columns(prefix_rank=_PREFIX_RANK)))
    # The process's rank in its largest communicator names the rank of its WARN lines.
    # NOTE: per file too: two attempts' logs parsed together (clusterlab.ingest.groups_text) may reuse a pid
    rank_of = (ranks.select("line", "host", "pid", "rank", "nranks", _f=file_of_line())
               .sort(["nranks", "line"], descending=[True, False])
               .unique(["_f", "host", "pid"], keep="first", maintain_order=True).drop("nranks", "line"))
    warns = _warn_fields(f.filter(pl.col("level") == "WARN"), ctx)
    # A bare echo of a WARN text (after "Last error:" in a PyTorch error); TRACE lines never count.
    trace = other.filter(text.str.contains("NCCL TRACE ", literal=True))
    echoes = other.filter(text.str.contains(_ECHO)).join(trace.select("line"), on="line", how="anti")
    # NOTE: a WARN whose prefix is not NCCL's own (a custom logger's, a masked host) is read as its message alone
    events = pl.concat([warns, echoes.with_columns(echo=pl.lit(True))], how="diagonal_relaxed")
    rest = info.filter(pl.col("what").is_null() & pl.col("fact_key").is_null())
    chains = rest.filter(pl.col("msg").str.contains(_CHAIN)).select(
        "line", "ts", "host", "pid", "tid", "text", res=pl.col("msg").str.extract(_CHAIN, 1),
        top=pl.col("msg").str.contains(_CHAIN_TOP), site=pl.col("msg").str.extract(r"^([\w./-]+:\d+) -> ", 1))
    out.add("events", _warn_events(events.with_columns(prefix_rank=_PREFIX_RANK), rank_of, chains.drop("ts", "text")))
    out.add("events", _silent_failures(chains, events))
    # TRACE lines and INFO retries ("Call to ibv_modify_qp failed ..., retrying") repeat an echo phrase:
    # understood and not wanted, so not unreadable either.
    ignored = [trace["line"], rest.filter(pl.col("msg").str.contains(_ECHO))["line"]]
    read = pl.concat([init["line"], facts["line"], events["line"], chains["line"], *ignored]).to_frame("line")
    # by number, not only counted: files parsed together get their own counts (clusterlab.ingest.groups_text)
    out.unparsed_lines = f.select("line").join(read, on="line", how="anti")["line"].sort()
    out.unparsed = len(out.unparsed_lines)
    return out


def _info_fields(info: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Host, pid and init-line fields of INFO lines, by splitting (no capture regex on the hot path)."""
    parts = pl.col("text").str.splitn(" NCCL INFO ", 2)
    f = info.with_columns(left=parts.struct.field("field_0"), msg=parts.struct.field("field_1"))
    # `[launcher prefix:]host:pid:tid` is the word before `[cudaDev]`.
    hpt = pl.col("left").str.split(" ").list.get(-2, null_on_oob=True)
    f = f.with_columns(
        hp=hpt.str.extract_groups(r"(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+)$"),
        ts=_stamp(pl.col("left").str.extract(r"\[(\d{4}-\d\d-\d\d[ T][\d:.,]+)\] ?\S+ \[\d+\]$", 1), ctx),
        i=pl.col("msg").str.extract_groups(
            r"comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cuda_dev>\d+) "),
        bus=pl.col("msg").str.extract(r" busId ([0-9a-f]+) ", 1),
        comm_id=pl.col("msg").str.extract(r" commId (0x[0-9a-f]+) ", 1),
        what=pl.col("msg").str.extract(r"- (Init START|Init COMPLETE|Abort COMPLETE|Destroy COMPLETE)$", 1),
        fact_key=pl.when(pl.col("msg").str.starts_with("NCCL version ")).then(pl.lit("nccl_version"))
        .when(pl.col("msg").str.contains(r"^Bootstrap ?: Using")).then(pl.lit("nccl_bootstrap_if")),
    ).unnest("hp", "i")
    # NOTE: non-strict: a number past its type's range is no rank or device, and must not cost the batch.
    return f.with_columns([pl.col(c).cast(t, strict=False) for c, t in
                           (("pid", pl.Int64), ("tid", pl.Int64), ("rank", pl.Int32), ("nranks", pl.Int32),
                            ("cuda_dev", pl.Int32))])


def _warn_fields(warns: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """The full NCCL prefix of WARN lines (rare: a capture regex is fine here)."""
    f = warns.drop("level").with_columns(pl.col("text").str.extract_groups(_HEAD).alias("h")).unnest("h")
    return f.with_columns(pl.col("pid").cast(pl.Int64, strict=False), ts=_stamp(pl.col("ts"), ctx),
                          echo=pl.lit(False))


def _stamp(raw: pl.Expr, ctx: Context) -> pl.Expr:
    """NCCL_DEBUG_TIMESTAMP_FORMAT's default `%F %T` (optionally with subseconds), local time, as UTC."""
    parsed = raw.str.replace(",", ".").str.replace("T", " ").str.to_datetime(
        "%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False)
    return local_to_utc(parsed, ctx.tz)


def _bus_id(raw: pl.Expr, values: pl.Series) -> pl.Expr:
    """NCCL's busId (`%lx` of the packed PCI address, e.g. 5d000) as 0000:5d:00.0, as its int64ToBusId does."""
    # A node has a handful of GPUs: format each distinct value once, not each row.
    table = {}
    for v in values.drop_nulls().unique().to_list():
        n = int(v, 16)
        table[v] = f"{n >> 20:04x}:{(n & 0xff000) >> 12:02x}:{(n & 0xff0) >> 4:02x}.{n & 0xf:01x}"
    return raw.replace_strict(table, default=None, return_dtype=pl.String)


def _facts(info: pl.DataFrame) -> pl.DataFrame:
    """NCCL version and bootstrap interface, once per process: they map addresses in WARNs to hosts."""
    facts = info.filter(pl.col("fact_key").is_not_null())
    value = (pl.when(pl.col("fact_key") == "nccl_version")
             .then(pl.col("msg").str.extract(r"^NCCL version (\S+)", 1))
             .otherwise(pl.col("msg").str.extract(r"Using ?(?:\[\d+\])?(\S+?)(?:<\d+>)?(?: \[\d+\].*)?$", 1)))
    return facts.select("line", "ts", "host", pl.col("fact_key").alias("key"), value.alias("value"))


def _aborts(aborts: pl.DataFrame) -> pl.DataFrame:
    """`comm ... - Abort COMPLETE`: a communicator this rank tore down after an error."""
    return aborts.select(
        "line", "ts", "host", kind=pl.lit("comm_abort"), failure_mode=pl.lit(None, pl.String),
        severity=pl.lit("warning"), rank=pl.coalesce("prefix_rank", "rank"),
        text="text", detail=json_detail(["pid", "cuda_dev", "comm", "nranks", "comm_id"]),
    )


def _warn_events(w: pl.DataFrame, rank_of: pl.DataFrame, chains: pl.DataFrame) -> pl.DataFrame:
    """One event per WARN line (or echo): kind and failure mode from the message, peer and IB fields."""
    if not w.height:
        return w
    msg = pl.coalesce("msg", "text")
    # NOTE: a WARN of a network transport (IB verbs, sockets, the AWS OFI plugin for EFA) that no kind reads
    network = pl.when(msg.str.contains(r"NET/(?:IB|Socket|OFI)|\bibv_|[Ss]ocket")).then(pl.lit("network"))
    kind, mode, severity = first_kind(msg, _WARN_KINDS, pl.lit("nccl_warn"), network, pl.lit("warning"))
    w = w.select(
        "line", "ts", "host", "text", "src", "func", "echo", "prefix_rank",
        kind=kind, failure_mode=mode, severity=severity, m=msg,
        pid=pl.col("pid").cast(pl.Int64, strict=False), cuda_dev=pl.col("dev").cast(pl.Int32, strict=False),
        tid=pl.col("tid").cast(pl.Int64, strict=False),
        via=pl.when(pl.col("echo")).then(pl.lit("last_error")),
    ).with_columns(
        failure_mode=pl.when(pl.col("kind") == "cuda_failure").then(cuda_mode(pl.col("m")))
        .when(pl.col("kind") == "nccl_test_failure").then(_error_text_mode(pl.col("m")))
        .otherwise(pl.col("failure_mode")),
        severity=pl.when((pl.col("kind") == "ib_async_event") & pl.col("m").str.contains("non-fatal"))
        .then(pl.lit("warning")).otherwise(pl.col("severity")),
    ).with_columns(
        failure_mode=pl.when(pl.col("kind") == "ib_async_event").then(
            pl.when(~pl.col("m").str.contains(_BENIGN_ASYNC)).then(pl.col("failure_mode")))
        .otherwise(pl.col("failure_mode")),
        severity=pl.when((pl.col("kind") == "ib_async_event") & pl.col("m").str.contains(_BENIGN_ASYNC))
        .then(pl.lit("info")).otherwise(pl.col("severity")),
    )
    w = _ib_fields(w).with_columns(_f=file_of_line())
    w = _by_result(w, chains).join(rank_of, on=["_f", "host", "pid"], how="left")
    cols = ["via", "pid", "tid", "cuda_dev", "src", "func", "peer_port", "status", "status_name", "opcode",
            "vendor_err", "req", "local_gid", "remote_gid", "hca", "ib_dev", "call", "error"]
    return w.sort("line").select(
        "line", "ts", "host", "kind", "failure_mode", "severity",
        rank=pl.coalesce("prefix_rank", "rank"), peer="peer", text="text", detail=json_detail(cols),
    )


def _silent_failures(chains: pl.DataFrame, warns: pl.DataFrame) -> pl.DataFrame:
    """A failed call's trace up to the caller's group in a file with no WARN: the call failed without saying why
    (NCCL 2.18's socketPollConnect returns ncclSystemError with no WARN; a log kept at NCCL_DEBUG=INFO but cut
    before its WARN). One event per process, of the mode its ncclResult_t names."""
    # NOTE: where a WARN or its echo is in the file, that WARN's event tells the story and takes the trace's mode
    told = warns.select(_f=file_of_line()).unique()
    # NOTE: or where one thread's call fails again and again (a proxy or service thread's retry loop: the same
    # `misc/socket.cc:47 -> 3` over and over) though its trace never reaches a group; one short trace is no failure
    again = pl.len().over("_f", "host", "pid", "tid", "site") >= _CHAIN_REPEATS
    top = (chains.with_columns(_f=file_of_line()).filter(pl.col("top") | (again & pl.col("site").is_not_null()))
           .join(told, on="_f", how="anti"))
    if not top.height:
        return top
    top = top.sort("line").unique(["_f", "host", "pid"], keep="first", maintain_order=True)
    return top.select(
        "line", "ts", "host", kind=pl.lit("nccl_call_failed"),
        failure_mode=pl.col("res").replace_strict(_RESULT_MODE, default="unknown", return_dtype=pl.String),
        severity=pl.lit("error"), text="text", detail=json_detail({"pid": pl.col("pid"), "tid": pl.col("tid"),
                                                                   "result": pl.col("res").cast(pl.Int32)}),
    )


def _error_text_mode(text: pl.Expr) -> pl.Expr:
    """The failure mode of the ncclResult_t a message quotes in words (unknown where it names none known)."""
    mode = pl.lit("unknown")
    for pattern, name in reversed(_NCCL_ERROR_TEXT):
        mode = pl.when(text.str.contains(pattern)).then(pl.lit(name)).otherwise(mode)
    return mode


def _by_result(w: pl.DataFrame, chains: pl.DataFrame) -> pl.DataFrame:
    """A WARN no message rule classifies takes the mode of the ncclResult_t its call's trace returns."""
    # NOTE: benign WARNs (no libibverbs, CollNet unsupported, a retry) return success and leave no trace after them
    open_ = (pl.col("kind") == "nccl_warn") & pl.col("failure_mode").is_null() & pl.col("tid").is_not_null()
    if not chains.height or not w.select(open_.any()).item():
        return w
    keys = ["_f", "host", "pid", "tid"]
    warns = w.filter(pl.col("tid").is_not_null()).select(*keys, wline="line").sort("wline")
    traced = (chains.with_columns(_f=file_of_line()).sort("line")
              .join_asof(warns, left_on="line", right_on="wline", by=keys, strategy="backward", check_sortedness=False)
              .filter(pl.col("line") - pl.col("wline") <= _CHAIN_LINES)
              .group_by("wline").agg(pl.col("res").sort_by("line").first()))
    w = w.join(traced.rename({"wline": "line"}), on="line", how="left")
    result = pl.col("res").replace_strict(_RESULT_MODE, default=None, return_dtype=pl.String)
    return w.with_columns(
        failure_mode=pl.when(open_).then(result).otherwise(pl.col("failure_mode")),
        severity=pl.when(open_ & result.is_not_null()).then(pl.lit("error")).otherwise(pl.col("severity")),
    ).drop("res")


def _ib_fields(w: pl.DataFrame) -> pl.DataFrame:
    """Peer address, completion status, opcode, vendor error, GIDs, HCA and failing verbs call."""
    m = pl.col("m")
    ib = pl.col("kind") == "ib_completion_error"
    status = m.str.extract(r"(?:with error |status=(?:IBV_\w+\()?)(\d+)", 1).cast(pl.Int32, strict=False)
    return w.with_columns(
        peer=m.str.extract(_PEER, 1), peer_port=m.str.extract(_PEER, 2).cast(pl.Int32, strict=False),
        status=pl.when(ib).then(status),
        status_name=pl.when(ib).then(pl.coalesce(
            m.str.extract(r"status=(IBV_\w+)\(", 1), status.replace_strict(WC_STATUS, default=None))),
        opcode=pl.when(ib).then(m.str.extract(r"opcode[= ](?:IBV_\w+\()?(\d+)", 1).cast(pl.Int32, strict=False)),
        vendor_err=m.str.extract(r"vendor[ _]err[ =](\d+)", 1).cast(pl.Int32, strict=False),
        req=m.str.extract(r"vendor[ _]err[ =]\d+ \((\w+)\)", 1),
        local_gid=m.str.extract(r"localGid (\S+)", 1),
        remote_gid=m.str.extract(r"remoteGids? ?(\S+)", 1),
        hca=m.str.extract(r" hca (\S+)", 1),
        ib_dev=pl.coalesce(m.str.extract(r"NET/IB ?: (\w+:\d+) ", 1), m.str.extract(r" on dev (\w+:\d+)", 1)),
        call=m.str.extract(r"\b(ibv_\w+)", 1),
        error=pl.coalesce(m.str.extract(r" failed (?:with (?:error )?)?: ?(.+)$", 1),
                          m.str.extract(r"failed with (?:error )?([^,]+)", 1),
                          m.str.extract(r"Cuda failure (?:\d+ )?'([^']*)'", 1)),
    )
