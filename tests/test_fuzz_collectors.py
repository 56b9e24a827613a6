"""Collectors and ingest under mutated real samples: no exception escapes, bad lines are named, good lines kept.

Seeded, bounded fuzzing (the same inputs on every run) over `data_samples/<source>/`: byte flips,
numbers replaced by huge numbers, letters or host-range bombs, cut lines, binary junk and duplicated lines. Then a few
mutated copies of part of `data_samples/bundle` through `Lab.ingest`, and the sniffers on heads
built to make a backtracking regex engine take minutes.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import time
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.collectors import all_collectors
from clusterlab.collectors._base import Parsed
from clusterlab.ingest.golden import context_for, is_sample
from conftest import SAMPLES

COLLECTORS = {c.NAME: c for c in all_collectors()}
# hostlists naming billions of hosts in a few bytes (a node list, a node-failure line): bounded, never expanded
BOMBS = ("[1-99][1-99][1-99][1-99]", "[1-999999999]", "[0-9999999,1-2][1-99999]")
HUGE = ("99999999999999999999", "3000000000", "-9223372036854775809", "1e400", "NaN", "x", "")
NEAR = 12  # lines this close to a mutation may change with it (tracebacks, merged step rows)


def _parse(c: ModuleType, texts: list[str], sample: Path) -> Parsed:
    """The collector on these lines as the engine calls it (only the lines PATTERN selects)."""
    schema = {"line": pl.Int64, "text": pl.String}
    frame = pl.DataFrame({"line": range(1, len(texts) + 1), "text": texts}, schema=schema)
    if c.PATTERN is not None:
        frame = frame.filter(pl.col("text").str.contains(c.PATTERN))
    return c.parse(frame, context_for(sample))


def _mutate(line: str, rng: random.Random) -> list[str]:
    """One mutation of one line: the lines that replace it."""
    op = rng.randrange(7)
    if op == 6 and (runs := list(re.finditer(r"\d+", line))):
        m = rng.choice(runs)
        return [line[: m.start()] + rng.choice(BOMBS) + line[m.end():]]
    if op == 0 and (runs := list(re.finditer(r"\d+", line))):
        m = rng.choice(runs)
        return [line[: m.start()] + rng.choice(HUGE) + line[m.end():]]
    if op == 1 and line:
        i = rng.randrange(len(line))
        return [line[:i] + chr(ord(line[i]) ^ (1 << rng.randrange(7))) + line[i + 1:]]
    if op == 2:
        return [line[: rng.randrange(len(line) + 1)]]
    if op == 3:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).decode("latin-1").replace("\n", "")
        i = rng.randrange(len(line) + 1)
        return [line[:i] + junk + line[i:]]
    if op == 4:
        return [line, line]
    return [re.sub(r"\d+", rng.choice(HUGE[:3]), line)]


def _fuzzed(texts: list[str], rng: random.Random, n: int, first: int = 0) -> tuple[list[str], dict[int, int], set[int]]:
    """Mutated lines, where each untouched original line (0-based) went (1-based), and the mutated new lines."""
    chosen = set(rng.sample(range(first, len(texts)), min(n, len(texts) - first)))
    out, where, touched = [], {}, set()
    for i, t in enumerate(texts):
        if i in chosen:
            for new in _mutate(t, rng):
                out.append(new)
                touched.add(len(out))
        else:
            out.append(t)
            where[i] = len(out)
    return out, where, touched


def _row_lines(p: Parsed) -> set[tuple[str, int]]:
    return {(t, ln) for t, f in p.tables.items() for ln in f["line"].to_list()}


CASES = [(name, p) for name in COLLECTORS for p in sorted((SAMPLES / name).glob("*"))
         if p.is_file() and is_sample(p)]


@pytest.mark.parametrize("name, sample", CASES, ids=[f"{n}/{p.name}" for n, p in CASES])
def test_mutated_sample_is_read_without_losing_its_good_lines(name: str, sample: Path) -> None:
    c = COLLECTORS[name]
    texts = sample.read_text(encoding="utf-8", errors="replace").split("\n")
    clean = _row_lines(_parse(c, texts, sample))
    for seed in range(2):
        rng = random.Random(f"{sample.name}:{seed}")
        # NOTE: a sacct dump's header names its columns: without it no row can be read (and that is said).
        lines, where, touched = _fuzzed(texts, rng, rng.randint(1, 6), first=int(name == "sacct"))
        parsed = _parse(c, lines, sample)  # no exception escapes
        for w in parsed.warnings:
            m = re.match(r"line (\d+): \S", w)
            assert m is None or 1 <= int(m.group(1)) <= len(lines), w
        got = _row_lines(parsed)
        far = {i for i, j in where.items() if all(abs(j - k) > NEAR for k in touched)}
        kept = {(t, where[ln - 1]) for t, ln in clean if ln - 1 in far}
        assert kept <= got, f"seed {seed}: good lines lost: {sorted(kept - got)[:5]}"


# One reproducer per crash the issue lists: the sample, and the number in one line made too big.
OVERFLOWS = [
    ("step_jsonl", "step_jsonl/rank_steps.jsonl", r'"rank": (\d+)'),
    ("sacct", "sacct/after_restart.psv", r"\|(\d+):\d+\|"),
    ("slurm_jobcomp", "slurm_jobcomp/filetxt.log", r"ExitCode=(\d+):"),
    ("preflight", "preflight/ring4_slow_rank.jsonl", r'"rank": (\d+)'),
    ("nccl", "nccl/ib_completion_2_21.log", r"nranks (\d+)"),
    ("nccl", "nccl/legacy_2_7_and_2_12.log", r"NCCL WARN .*?\] .*? \[(\d+)\]|:\d+:\d+ \[(\d+)\] \S+ NCCL WARN"),
    ("deepspeed", "deepspeed/pipe_restart.log", r"\[Rank (\d+)\]"),
    ("megatron", "megatron/core_async_2026.log", r"number of skipped iterations: +(\d+)"),
    ("kernel", "kernel/dmesg_raw.log", r"^\[ *(\d+)\.\d+\]"),
    ("torch", "torch/legacy_1_13.log", r"^  rank +: (\d+)"),
    ("torch", "torch/legacy_1_13.log", r"^  exitcode +: (-?\d+)"),
]


@pytest.mark.parametrize("name, rel, number", OVERFLOWS, ids=[f"{n}:{r}" for n, r, _ in OVERFLOWS])
def test_one_out_of_range_number_costs_at_most_its_line(name: str, rel: str, number: str) -> None:
    sample = SAMPLES / rel
    texts = sample.read_text(encoding="utf-8", errors="replace").split("\n")
    i, m = next((i, m) for i, t in enumerate(texts) if (m := re.search(number, t)))
    g = next(k for k in range(1, m.re.groups + 1) if m.group(k) is not None)
    clean = _row_lines(_parse(COLLECTORS[name], texts, sample))
    for big in ("99999999999999999999", "3000000000"):
        bad = [*texts[:i], texts[i][: m.start(g)] + big + texts[i][m.end(g):], *texts[i + 1:]]
        got = _row_lines(_parse(COLLECTORS[name], bad, sample))
        assert {r for r in clean if abs(r[1] - (i + 1)) > NEAR} <= got


# Heads on which a backtracking engine runs for minutes (quadratic or worse in a 64 KiB line).
SLOW_HEADS = ["a", "1", "-", "|", "1.", "2026-01-01T", "NVRM: ", "NVRM: NVLink ", "steps: 1 loss: ", "buildd"]


@pytest.mark.parametrize("unit", SLOW_HEADS)
def test_sniffing_a_64k_line_takes_no_time(unit: str) -> None:
    head = (unit * (65536 // len(unit) + 1))[:65536].encode()
    for c in COLLECTORS.values():
        t = time.monotonic()
        c.sniff(head, "x.log")
        assert time.monotonic() - t < 5, c.NAME  # was over 60 s (nccl), 9 s (megatron)


def _sub_bundle(dest: Path) -> list[Path]:
    """The bundle without most per-rank step files (time): its evidence files, for mutating."""
    src = SAMPLES / "bundle"
    shutil.copytree(src, dest, ignore=lambda d, names: [n for n in names if n.endswith(".jsonl.gz")
                                                         and n not in ("rank-1.jsonl.gz", "rank-2.jsonl.gz")])
    return sorted(p for p in dest.rglob("*") if p.is_file() and p.name not in ("inventory.toml", "run.toml",
                                                                                 "boot_time", "truth.json"))


@pytest.mark.parametrize("seed", range(2))
def test_mutated_bundle_ingests_with_named_problems_and_in_bounded_time(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    files = _sub_bundle(tmp_path / "bundle")
    for f in rng.sample([f for f in files if not f.name.endswith(".gz")], 4):
        texts = f.read_text(encoding="utf-8", errors="replace").split("\n")
        f.write_text("\n".join(_fuzzed(texts, rng, 8)[0]), encoding="utf-8")
    gz = next(f for f in files if f.name.endswith(".gz"))
    gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])  # a cut gzip among them
    long = tmp_path / "bundle" / "nodes" / "east-004" / "dmesg"
    long.write_text(long.read_text() + "NVRM: NVLink " * 40_000 + "\n" + "a" * 200_000 + "\n")
    odd = rng.choice([f for f in files if f != gz and f != long])  # a name that is not UTF-8
    os.rename(odd, os.fsencode(odd.parent) + b"/" + os.fsencode(odd.name) + b"\xff")
    t = time.monotonic()
    with Lab(":memory:") as lab:
        res = lab.ingest(tmp_path / "bundle")
        assert lab.sql("SELECT count(*) AS n FROM events")["n"][0] > 0
        assert lab.sql("SELECT count(*) AS n FROM ingested_files WHERE ends_with(path, '\\xff')")["n"][0] == 1
        again = lab.ingest(tmp_path / "bundle")  # again: nothing new, a name that is not UTF-8 included
        assert set(again.counts()) <= {"unchanged", "error", "skipped"}, again.counts()
        # then logrotate: one log renamed `.1` and a new one begun, another copied and truncated in place
        before = lab.sql("SELECT count(*) AS n FROM events")["n"][0]
        logs = [f for f in files if f.exists() and f != gz and not f.name.endswith(".gz") and f.stat().st_size]
        moved, cut = rng.sample(logs, 2)
        head = moved.read_text(encoding="utf-8", errors="replace").split("\n")[:3]
        os.rename(moved, moved.with_name(moved.name + ".1"))
        moved.write_text("\n".join(head) + "\n")
        shutil.copy(cut, cut.with_name(cut.name + ".1"))
        cut.write_text("")
        lab.ingest(tmp_path / "bundle")
        assert lab.sql("SELECT count(*) AS n FROM events")["n"][0] >= before  # rotation erases nothing stored
    assert time.monotonic() - t < 120
    for problem in res.problems:
        assert problem.startswith("bundle/"), problem
    assert any(p.startswith(f"bundle/{gz.relative_to(tmp_path / 'bundle')}:") for p in res.problems)
