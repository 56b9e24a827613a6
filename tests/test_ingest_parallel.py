"""Batched, grouped and parallel ingest store exactly the rows of a file-by-file, one-process ingest."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from clusterlab import Lab, store
from clusterlab.collectors import all_collectors
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text
from clusterlab.ingest import write as ingest_write
from clusterlab.ingest.heads import choose
from clusterlab.ingest.reader import read_head
from clusterlab.store import evidence_schema
from clusterlab.tables import TABLE_COLUMNS

SAMPLES = Path(__file__).parent.parent / "data_samples"


def _made(db: Path) -> bool:
    """Whether the database got its whole schema (the first ingest makes it one migration at a time)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return store.current_version(con) == store.SCHEMA_VERSION
    except duckdb.Error:
        return False
    finally:
        con.close()


def _snapshot(db: Path | str) -> dict[str, list[tuple]]:
    """Every stored row, keyed by the file's path instead of its id, and each file's record."""
    with Lab(db, read_only=True) as lab:
        out = {t: lab.sql(f"SELECT f.path AS _file, t.* EXCLUDE (file_id) FROM {t} t "
                          "JOIN ingested_files f USING (file_id) ORDER BY ALL").rows()
               for t in [*TABLE_COLUMNS, "unmatched_lines"]}
        out["ingested_files"] = lab.sql(
            "SELECT * EXCLUDE (file_id, ingested_at) FROM ingested_files ORDER BY path").rows()
        out["orphans"] = lab.sql("SELECT count(*) FROM events WHERE file_id NOT IN "
                                 "(SELECT file_id FROM ingested_files)").rows()
    return out


def _ingest(db: Path, *paths: Path, workers: int | None = 1, one_by_one: bool = False) -> list[tuple]:
    with Lab(db) as lab:
        if one_by_one:
            got = []
            for p in paths:
                got += [(f.status, f.rows, f.unparsed, f.messages) for f in lab.ingest(p, workers=workers).files]
            return got
        return [(f.display, f.status, f.rows, f.unparsed, f.messages)
                for f in lab.ingest(*paths, workers=workers).files]


def _ingest_alone(db: Path, *paths: Path) -> list[tuple]:
    """`_ingest` with every file parsed alone, one a transaction: the reference a grouped ingest must equal."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ingest_group, "GROUP_FILES", False)
        m.setattr(ingest_write, "BATCH_FILES", 1)
        return _ingest(db, *paths)


def _many_step_files(root: Path, n: int = 120) -> None:
    """Small per-rank step files, some gzipped, some with junk or blank lines, a rank past 32 bits, a record
    without a time, some without a last newline."""
    rng = random.Random(7)
    for r in range(n):
        recs = [json.dumps({"ts": 1795824000 + s * 2.5, "rank": r, "host": f"n{r // 8:03d}", "step": s,
                            "step_s": 2.5, "compute_s": 2.0, "comm_s": 0.4, "data_s": 0.1, "tokens": 4096,
                            "loss": 3 - s / 100}) for s in range(rng.randint(5, 40))]
        if r % 17 == 3:
            recs.insert(2, "WARNING: not json")
        if r % 23 == 5:
            recs.insert(1, "")
        if r == 11:
            recs.append(json.dumps({"ts": 1795824999, "rank": 2**40, "step": 1}))
        if r == 13:
            recs.append(json.dumps({"rank": 13, "step": 99, "step_s": 1.0}))  # no time: takes the one before
        text = "\n".join(recs) + ("\n" if r % 5 else "")
        p = root / "runs" / "many" / f"attempt-{1 + r % 2}" / "steps" / f"rank-{r}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        if r % 3 == 0:
            p.with_suffix(".jsonl.gz").write_bytes(gzip.compress(text.encode()))
        else:
            p.write_text(text)


def _text(lines: list[str], newline: str = "\n", last: bool = True) -> str:
    return newline.join(lines) + (newline if last else "")


def _many_text_logs(root: Path) -> None:
    """Small kernel and NCCL logs that trap a group parse: a call trace whose hung-task header ends the file
    before it, dmesg -H deltas before any minute line, one pid holding different ranks in two attempts' NCCL
    logs, a FQDN of the file's own host, foreign and unreadable lines, a raw dmesg log without a boot time, a
    line for a collector that cannot be grouped, a byte that is not UTF-8, CRLF, gzip and a missing last newline."""
    t = "[Wed Nov 25 04:04:{:02d} 2026] "
    logs = {
        "nodes/t000/kern.log": _text([
            t.format(0) + "NVRM: Xid (PCI:0000:4c:00): 13, pid=88412, name=python3, Graphics SM Warp Exception",
            t.format(10) + "INFO: task python:79892 blocked for more than 122 seconds."]),
        "nodes/t001/kern.log": _text([
            t.format(20) + " rpc_wait_bit_killable+0x1e/0xb0 [sunrpc]",
            t.format(20) + " nfs_wait_on_request+0x2c/0x40 [nfs]",
            t.format(30) + "NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus.",
            t.format(31) + "NVRM: Xid (PCI:0000:1b:00): garbled"], last=False),
        "nodes/t002/kern.log": _text([
            "[Nov24 08:00] NVRM: GPU at PCI:0000:1b:00: GPU-2a9c0d11-77e4-4b0e-9c1a-5e6f7a8b9c0d",
            "[  +0.000012] NVRM: Xid (PCI:0000:1b:00): 79, pid=431208, name=python3, GPU has fallen off the bus.",
            "[Nov24 09:14] NVRM: Xid (PCI:0000:1b:00): 48, pid=1, name=python3, An uncorrectable double bit error"]),
        "nodes/t003/kern.log": _text([
            "[  +0.000012] NVRM: Xid (PCI:0000:2b:00): 79, pid=431208, name=python3, GPU has fallen off the bus.",
            "[Nov24 10:00] NVRM: Xid (PCI:0000:2b:00): 31, pid=1, name=python3, Ch 00000010, intr 10000000"],
            newline="\r\n"),
        "nodes/t004/kern.log": _text([
            "2026-11-24T06:01:39+00:00 t004.cluster.example kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=7, "
            "name=python3, GPU has fallen off the bus.",
            "2026-11-24T06:01:40+00:00 t004 nvidia-persistenced[812]: NVRM: Xid (PCI:0000:3b:00): 79, repeated",
            "2026-11-24T06:01:41+00:00 t004 kernel: mlx5_core 0000:3b:00.1: mlx5e_port_module_event:1: error"]),
        "nodes/t005/kern.log": _text(["[410421.856810] NVRM: Xid (PCI:0000:4c:00): 79, pid=1, name=python3, x"]),
        "nodes/t006/kern.log": _text([
            t.format(40) + "NVRM: Xid (PCI:0000:4c:00): 94, pid=1, name=python3, Contained ECC error",
            "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 0 (pid: 9)"]),
        "runs/many/attempt-1/nccl/t000.log": _text([
            "t000:4242:4300 [0] NCCL INFO comm 0x55d0c0000001 rank 3 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
            "commId 0x9f3a01 - Init COMPLETE",
            "t000:4242:4300 [0] NCCL INFO Channel 00/0 : 3 -> 4 via NET/IB/0",
            "t000:4242:4301 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            "10.0.0.7<53124> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.5"]),
        "runs/many/attempt-2/nccl/t000.log": _text([
            "t000:4242:4300 [0] NCCL INFO comm 0x55d0c0000002 rank 9 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
            "commId 0x9f3a02 - Init COMPLETE",
            "t000:4242:4301 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer "
            "10.0.0.8<40321>",
            "t000:4242:4301 [0] NCCL WARN"], last=False),
    }
    for rel, text in logs.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("t004/kern.log"):  # one byte that is not UTF-8 (a Latin-1 é): the file still groups
            p.write_bytes(text.replace("port_module_event", "port_module_\u00e9vent").encode("latin-1"))
        elif rel.endswith("t002/kern.log"):
            p.with_suffix(".log.gz").write_bytes(gzip.compress(text.encode()))
        else:
            p.write_bytes(text.encode())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("many")
    _many_step_files(root)
    _many_text_logs(root)
    return [SAMPLES / "bundle", SAMPLES / "simulated", root]


@pytest.fixture(scope="module")
def reference(corpus: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list]:
    """Each file parsed alone, one per transaction, in this process."""
    db = tmp_path_factory.mktemp("ref") / "ref.duckdb"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ingest_group, "GROUP_FILES", False)
        m.setattr(ingest_write, "BATCH_FILES", 1)
        results = _ingest(db, *corpus)
    return _snapshot(db), results


def test_grouped_and_batched_ingest_stores_the_rows_of_a_file_by_file_one(corpus, reference, tmp_path) -> None:
    snap, results = reference
    assert any(r[1] == "ingested" and r[2].get("rank_steps") for r in results)
    assert any("not a step record" in m for r in results for m in r[4])
    assert any("raw dmesg timestamps" in m for r in results for m in r[4])
    groups = []  # the text logs must have been parsed together, not all fallen back to one by one
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append(len(items)) or real(items, chosen, *a))
        m.setattr(ingest_group, "GROUP_BYTES", 3000)  # many groups, cut anywhere
        assert _ingest(tmp_path / "g.duckdb", *corpus) == results
    assert _snapshot(tmp_path / "g.duckdb") == snap
    assert max(groups) >= 5


def test_two_workers_store_the_rows_of_one(corpus, reference, tmp_path) -> None:
    snap, results = reference
    with pytest.MonkeyPatch.context() as m:
        # a worker's chunk crosses as one packed set of rows: transactions of 7 files cut every chunk, each
        # storing its own files' rows only
        m.setattr(ingest_write, "BATCH_FILES", 7)
        assert _ingest(tmp_path / "w.duckdb", *corpus, workers=2) == results
    assert _snapshot(tmp_path / "w.duckdb") == snap


def test_a_copy_in_a_workers_chunk_is_stored_once(tmp_path) -> None:
    """The writer drops a file it already stored in this call (same content, run, attempt and host): its rows,
    packed with the rest of its chunk, are left out of the insert."""
    root = tmp_path / "runs" / "dup" / "attempt-1"
    _many_step_files(tmp_path / "src", n=12)
    src = sorted((tmp_path / "src").rglob("rank-*.jsonl"))
    for i, p in enumerate(src):
        (root / "a").mkdir(parents=True, exist_ok=True)
        (root / "a" / f"r{i}.jsonl").write_bytes(p.read_bytes())
    (root / "b").mkdir()
    (root / "b" / "copy.jsonl").write_bytes(src[0].read_bytes())  # the same file again, same run and attempt
    counts = []
    for workers in (1, 2):
        db = tmp_path / f"d{workers}.duckdb"
        got = _ingest(db, tmp_path / "runs", workers=workers)
        assert [r[1] for r in got if r[0].endswith("copy.jsonl")] == ["unchanged"]
        with Lab(db, read_only=True) as lab:
            counts.append(lab.sql("SELECT count(*) AS n, count(DISTINCT (file_id, line)) AS d FROM rank_steps").rows())
    assert counts[0] == counts[1] and counts[0][0][0] == counts[0][0][1] > 0


def test_sniff_hints_past_the_first_4_kib_are_found(tmp_path) -> None:
    """Hints are listed in a head's first 4 KiB and looked for past it: the hints `read_heads` finds are the
    ones the whole head holds, whatever their place (a hint across the 4 KiB mark, or only at the end)."""
    from clusterlab.collectors._base import Context
    from clusterlab.ingest.bundle import FileTask
    from clusterlab.ingest.heads import NEAR_BYTES, _hints, read_heads
    from clusterlab.ingest.parse import FilePlan

    pad = '"x": "' + "a" * (NEAR_BYTES - 30)
    heads = {
        "sacct_late.json": '{"meta": {' + pad + '"}, "jobs": [{"job_id": 7, "state": {"current": ["FAILED"]}}]}\n',
        "across.txt": "z" * (NEAR_BYTES - 3) + "DCGM_FI_DEV_GPU_TEMP 40\n",
        "far_upper.txt": "line\n" * 2000 + "Driver Version : 550.54\nUUID x\n",
        "near.jsonl": '{"step": 1, "rank": 0}\n',
        # hints that hold a regex's metacharacters or a letter past ASCII, in another case, far in
        "far_meta.txt": "line\n" * 2000 + "step ended (EXIT CODE 9) |Completed| X.Compute.Internal LOS\u017f\n",
        "none.txt": "nothing here\n" * 700,
    }
    plans = []
    for name, text in heads.items():
        p = tmp_path / name
        p.write_text(text)
        task = FileTask(p, name, True, None, None, None)
        plans.append(FilePlan(task, Context(path=name), file_id=1, whole_hash="", size=p.stat().st_size))
    got, hints, _ = read_heads(plans)
    for plan, (head, _), found in zip(plans, got, hints, strict=True):
        low = head.lower()
        assert {h for h in _hints() if h.encode() in low} == found.found, plan.task.display
    assert "dcgm_fi_" in hints[1].found and {"driver version", "uuid"} <= hints[2].found
    assert {"(exit code ", "|completed|", ".compute.internal", "los\u017f"} <= hints[4].found
    assert choose(got[0][0], "sacct_late.json", all_collectors(), hints[0])[0].NAME == "sacct"


def test_files_one_call_each_store_the_rows_of_one_call(corpus, reference, tmp_path) -> None:
    snap, _ = reference
    many = corpus[2]
    files = sorted(p for p in many.rglob("rank-*") if p.is_file())[:30]  # a call costs ~0.3 s: thirty make the point
    db = tmp_path / "one.duckdb"
    one = _ingest(db, *files, one_by_one=True)
    assert {s for s, *_ in one} == {"ingested"}
    names = {str(p) for p in files}
    mine = {t: [r for r in rows if str(r[0]) in names] for t, rows in _snapshot(db).items() if t != "orphans"}
    ref = {t: [r for r in rows if str(r[0]) in names] for t, rows in snap.items() if t != "orphans"}
    assert mine == ref
    assert len(mine["rank_steps"]) > 300 and len(mine["ingested_files"]) == 30


def test_text_logs_parsed_together_keep_to_their_own_file(corpus, reference, tmp_path) -> None:
    snap, _ = reference
    root = corpus[2]
    files = sorted(p for p in [*(root / "nodes").rglob("*"), *(root / "runs").rglob("*.log")] if p.is_file())
    db = tmp_path / "text.duckdb"
    grouped: list[str] = []
    kinds: list[set] = []  # what each group's logs are: one kind a group (the patterns' union is slow on a mix)
    with pytest.MonkeyPatch.context() as m:
        real = ingest_group_text.parse_text_group

        def spy(items, chosen, *a):
            kinds.append({o.sniffed for o, _, _ in items})
            alone = real(items, chosen, *a)
            grouped.extend(str(o.plan.task.path) for o, x, _ in items if all(a[1] is not x for a in alone))
            return alone
        m.setattr(ingest_group, "parse_text_group", spy)
        _ingest(db, *files)  # one group: nothing cuts it
    assert any(p.endswith("t004/kern.log") for p in grouped)  # its byte that is not UTF-8 kept it in
    assert all(len(k) == 1 for k in kinds) and {"kernel", "nccl"} <= set().union(*kinds)
    names = {str(p) for p in files}
    mine = {t: [r for r in rows if str(r[0]) in names] for t, rows in _snapshot(db).items() if t != "orphans"}
    ref = {t: [r for r in rows if str(r[0]) in names] for t, rows in snap.items() if t != "orphans"}
    assert mine == ref
    # the same pid held rank 3 in the first attempt and rank 9 in the second: each WARN names its own
    rank = list(evidence_schema("events")).index("rank")  # the snapshot's columns: the path, then the rest
    ranks = {(r[0].split("/")[-3], r[rank]) for r in mine["events"] if "/nccl/" in r[0] and r[rank] is not None}
    assert ranks == {("attempt-1", 3), ("attempt-2", 9)}


def test_sniff_hints_are_necessary_conditions() -> None:
    """A collector's SNIFF_HINT skips its sniff: no file it would claim may lack the hint."""
    hinted = [c for c in all_collectors() if getattr(c, "SNIFF_HINT", None)]
    assert {c.NAME for c in hinted} >= {"step_jsonl", "sacct", "preflight"}
    checked = 0
    for p in SAMPLES.rglob("*"):
        if not p.is_file() or p.suffix in (".toml", ".json") and p.name != "truth.json":
            continue
        head = read_head(p)
        for c in hinted:
            if c.sniff(head, p.name):
                checked += 1
                assert any(h in head.lower() for h in c.SNIFF_HINT), f"{p}: {c.NAME} sniffs it without its hint"
    assert checked > 50
    assert choose(read_head(next(SAMPLES.rglob("rank-0.jsonl.gz"))), "x", all_collectors())[0].NAME == "step_jsonl"


@pytest.mark.slow
def test_sigkill_during_a_parallel_batched_ingest_leaves_whole_files(tmp_path: Path) -> None:
    """Killed at random moments (process group and workers), the store holds whole files only; a rerun completes
    it to exactly what a clean ingest gives."""
    root = tmp_path / "fleet"
    _many_step_files(root, n=900)
    clean = tmp_path / "clean.duckdb"
    _ingest(clean, root, workers=1)
    want = _snapshot(clean)
    db = tmp_path / "k.duckdb"
    cli = [sys.executable, "-m", "clusterlab.cli", "--db", str(db), "ingest", "--workers", "2", str(root)]
    t0 = time.perf_counter()  # how long a whole run takes here: the kills fall inside one, however fast
    subprocess.run(cli, capture_output=True)
    whole = time.perf_counter() - t0
    db.unlink()
    rng = random.Random(3)
    kills = 0
    for _ in range(3):
        proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.3, 0.9) * whole)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        if not db.exists() or not _made(db):  # killed before it made the database (or while it did)
            continue
        got = _snapshot(db)
        assert got["orphans"] == [(0,)]
        stored = {r[0] for r in got["ingested_files"]}
        for t in ("rank_steps", "ingested_files"):
            assert got[t] == [r for r in want[t] if r[0] in stored], f"{t}: a partial file after the kill"
    done = subprocess.run(cli, capture_output=True, text=True)
    # the junk lines are reported (exit 2) by whichever run read their files; a kill may come after the last
    assert done.returncode == (2 if "not a step record" in done.stderr else 0), done.stderr
    assert _snapshot(db) == want
    assert kills, "every ingest finished before its kill: the test proves nothing"


def test_an_unguarded_script_ingests_in_its_own_process(corpus, tmp_path: Path) -> None:
    """A spawned worker runs the main script again: one without a `__main__` guard must not start workers."""
    script = tmp_path / "unguarded.py"
    script.write_text("import sys\nfrom clusterlab import Lab\n"
                      "with Lab(sys.argv[1]) as lab:\n"
                      "    print(sum(f.status == 'ingested' for f in lab.ingest(sys.argv[2], workers=2).files))\n")
    nccl = corpus[2] / "runs" / "many"
    got = subprocess.run([sys.executable, str(script), str(tmp_path / "u.duckdb"), str(nccl)],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    assert int(got.stdout.split()[-1]) > 100 and "no `if __name__" in got.stderr


def _children(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return {int(x) for x in f.read().split()}
    except OSError:
        return set()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] not in "ZX"  # a zombie has stopped: it only waits to be reaped
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_workers_die_with_an_ingest_killed_with_sigkill(tmp_path: Path) -> None:
    line = "2026-11-24T08:20:25+00:00 east-003 kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid=1, name=python\n"
    root = tmp_path / "logs"
    root.mkdir()
    for i in range(300):
        (root / f"node-{i:03d}.log").write_text(line * 3000)  # ~90 MB: seconds of parsing for two workers
    cmd = [sys.executable, "-m", "clusterlab.cli", "--db", str(tmp_path / "k.duckdb"), "ingest", "--workers", "2",
           str(root)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline, workers = time.monotonic() + 60, set()
    while time.monotonic() < deadline and proc.poll() is None:
        # the workers, and the resource tracker multiprocessing starts beside them
        workers = _children(proc.pid)
        if len(workers) >= 3:
            break
        time.sleep(0.01)
    assert len(workers) >= 3 and proc.poll() is None, "the ingest ended before its workers were seen"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.05)
    left = [p for p in workers if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"{len(left)} processes outlived the killed ingest"
