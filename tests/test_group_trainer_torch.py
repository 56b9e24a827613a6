"""Trainer logs of torch.distributed, ft_launcher and NaN guards parsed together (clusterlab.ingest.groups_text)
store exactly what parsing each alone stores.

The logs trap a group parse: a traceback whose exception never came ends a file and the next file starts with an
exception line of the same `[rank3]:` stream; a chain marker ("During handling ...") ends a file and the next
starts a traceback; a summary's `Root Cause` header ends a file and the next starts with an entry's fields; a
`what():` repeat of a watchdog line logged only in an earlier file; an MMEngine grad norm that is finite in one
file and NaN at the start of the next; untimed lines first in a file; unreadable lines in several files; CRLF,
gzip and a missing last newline."""

from __future__ import annotations

import gzip
import tomllib
from pathlib import Path

import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab.collectors import all_collectors, nan_guards
from clusterlab.collectors._base import search
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text
from clusterlab.ingest.heads import choose
from clusterlab.store import evidence_schema

WATCHDOG = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.")
MM = "2026-11-24 21:{:02d}:11,502 - mmdet - INFO - Iter [{}/316440]\tlr: 3.990e-04, loss: {}, grad_norm: {}"
FT = "2026-11-24 10:{:02d}:07,882 [WARNING] [gpu-018] [workload:?(5) infra:1(5)] rank_monitor_server.py:498 "
LOGS = {
    # ends inside a traceback of [rank3] (its exception never came)
    "attempt-1/train.log": [
        "W1125 10:02:11.530000 88120 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable "
        "for each process to be 1 in default",
        f"[rank3]:[E1125 10:15:01.123456789 ProcessGroupNCCL.cpp:616] [Rank 3] {WATCHDOG}",
        "[rank3]:Traceback (most recent call last):",
        '[rank3]:  File "train.py", line 10, in <module>'],
    # untimed lines first: an exception of [rank3] with no traceback of its own; ends with a chain marker
    "attempt-2/train.log": [
        "[rank3]:RuntimeError: CUDA error: an illegal memory access was encountered",
        "nothing to read here",
        "[rank3]:[E1125 10:20:00.000000000 ProcessGroupNCCL.cpp:1000] [Rank 3] Some NCCL operations have failed "
        "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "ValueError: bad value",
        "",
        "During handling of the above exception, another exception occurred:"],
    # starts a traceback (CRLF); ends with a summary's header and its first field
    "attempt-3/train.log": [
        "Traceback (most recent call last):",
        '  File "y.py", line 2, in <module>',
        "KeyError: 'x'",
        "E1125 10:30:00.000000 1234 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) "
        "local_rank: 0 (pid: 1234) of binary: /usr/bin/python3",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-25_10:30:00"],
    # starts with the rest of an entry (gzip); a `what():` whose watchdog line only an earlier file logged
    "attempt-4/train.log.gz": [
        "  host      : gpu-017.cluster.example",
        "  rank      : 5 (local_rank: 5)",
        "  exitcode  : -9 (pid: 4321)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 4321",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank 5] {WATCHDOG}",
        "[rank1]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.21.5"],
    # a finite grad norm (no last newline), ft_launcher lines, one it cannot read
    "attempt-5/train.log": [
        "[rank1]:ncclSystemError: System call (e.g. socket, malloc) or external library call failed.",
        MM.format(40, 10050, "0.5084", "3.9112"),
        FT.format(41) + "[Cycle 0] Did not get subsequent heartbeat. Waited 600.00 seconds.",
        "garbage [workload:?(5) infra:1(5)] rank_monitor_server.py:498 Did not get subsequent heartbeat"],
    # a NaN grad norm first: no finite one before it in this file; a summary entry that names no rank
    "attempt-6/train.log": [
        MM.format(58, 10100, "2.51", "nan"),
        MM.format(59, 10150, "2.52", "nan"),
        FT.format(42) + "[Cycle 1] Section 'step' has been open for 301.27 seconds. Timeout is 300.00 seconds.",
        "garbage [workload:?(5) infra:1(5)] rank_monitor_server.py:498 Did not get subsequent heartbeat",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-25_10:40:00",
        "  host      : gpu-1",
        "  error_file: <N/A>",
        "Traceback (most recent call last):"],
}


def _write(root: Path) -> list[Path]:
    paths = []
    for rel, lines in LOGS.items():
        p = root / "runs" / "adv" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        newline = "\r\n" if rel.startswith("attempt-3/") else "\n"
        text = newline.join(lines) + ("" if rel.startswith("attempt-5/") else newline)
        p.write_bytes(gzip.compress(text.encode()) if rel.endswith(".gz") else text.encode())
        paths.append(p)
    return paths


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trainer")
    _write(root)
    return root


def test_trainer_logs_parsed_together_store_the_rows_of_each_parsed_alone(logs, tmp_path) -> None:
    alone = _ingest_alone(tmp_path / "alone.duckdb", logs)
    groups: list[tuple[int, int]] = []  # (files, sent back alone)
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group

        def spy(items, chosen, *a):
            rest = real(items, chosen, *a)
            groups.append((len(items), len(rest)))
            return rest

        m.setattr(ingest_group, "parse_text_group", spy)
        grouped = _ingest(tmp_path / "grouped.duckdb", logs)
    assert groups == [(len(LOGS), 0)]  # one group, no file sent back to be parsed alone
    assert grouped == alone
    snap = _snapshot(tmp_path / "alone.duckdb")
    assert _snapshot(tmp_path / "grouped.duckdb") == snap
    # the traps were there to fall into: each file kept what only it says
    unparsed = {Path(r[0]).parent.name: r[3] for r in alone}
    assert unparsed == {"attempt-1": 1, "attempt-2": 0, "attempt-3": 1, "attempt-4": 0, "attempt-5": 1,
                        "attempt-6": 5}
    kind = list(evidence_schema("events")).index("kind")  # the snapshot's columns: the path, then the rest
    kinds = {(Path(r[0]).parent.name, r[kind]) for r in snap["events"]}
    assert ("attempt-4", "watchdog_timeout") in kinds  # its `what():` is the only word of that timeout it has
    assert ("attempt-6", "grad_norm_nonfinite") not in kinds  # no finite grad norm came before in that file
    assert ("attempt-3", "python_exception") in kinds  # KeyError: no cause from the file before


def test_the_trap_logs_are_read_by_grouping_collectors_only(logs) -> None:
    """Every line a collector reads goes to torch, ft_launcher or nan_guard: the group test is about them."""
    chosen = [c for c in all_collectors() if not getattr(c, "EXCLUSIVE", False)]
    readers = set()
    for rel, lines in LOGS.items():
        assert choose("\n".join(lines).encode(), rel, all_collectors()), rel
        readers |= {c.NAME for c in chosen for ln in lines if search(ln, c.PATTERN)}
    assert readers == {"torch", "ft_launcher", "nan_guard"}


def test_the_pytorch_and_launcher_excerpts_parsed_as_one_group_store_the_rows_of_each_alone(tmp_path) -> None:
    """Every PyTorch and launcher shape the format tests hold (tracebacks, summaries, prefixes, chains), a file each."""
    here = Path(__file__).resolve().parent
    n = 0
    for toml in [here / "real_excerpts" / "pytorch.toml", *(here / "format_variants").glob("[pl]*.toml")]:
        for case in tomllib.loads(toml.read_text())["case"]:
            n += 1
            name = Path(case.get("file") or case.get("path") or "excerpt.log").name
            p = tmp_path / "tree" / "runs" / "x" / f"attempt-{n}" / name
            p.parent.mkdir(parents=True)
            p.write_text(case["text"])
    assert n > 80
    alone = _ingest_alone(tmp_path / "alone.duckdb", tmp_path / "tree")
    groups: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append((len(items), len(rest := real(items, chosen, *a)))) or rest)
        assert _ingest(tmp_path / "grouped.duckdb", tmp_path / "tree") == alone
    assert _snapshot(tmp_path / "grouped.duckdb") == _snapshot(tmp_path / "alone.duckdb")
    assert sum(a - b for a, b in groups) > 0.9 * n  # parsed together, not sent back one by one


@pytest.mark.parametrize("head", [
    "2026-11-24 21:40:11,502 - mmdet - INFO - Iter [10/20]\tloss: 0.5, grad_norm: 3.9 \u2018caf\u00e9\u2019\n",
    "step 100 caf\u00e9 total_loss: nan\n",  # a Unicode letter before `step`: no word boundary, no match
    "\u00e9step 100 total_loss: nan\n",
    "iter 3010: lo\u017fs nan, time 1.0ms\n",  # a long s is an s to `(?i:loss)`
    "10/20 [00:01\n<00:02, loss=nan]\n",  # a progress bar's brackets across two lines
    "Detected nan and/or inf values in `layer\n.weight`\n",
    "Epoch [1][10/20]\nloss: nan\n",
    "\u2588" * 300 + "\nnothing\n",
    "plain ASCII, nothing to see\n",
])
def test_the_nan_guard_sniff_says_what_its_whole_pattern_says(head: str) -> None:
    data = head.encode()
    assert nan_guards.sniff(data, "x.log") == search(data, nan_guards._HEAD)
    if nan_guards.sniff(data, "x.log"):
        assert any(h in data.lower() for h in nan_guards.SNIFF_HINT)
