"""`unmatched` finds the unknown (issue 30): continuation lines go with the line they continue, masks are careful
(a host is a host, `c10::` and `[rank0]:` are not, a path keeps its file name), real unknowns come first."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from clusterlab import Lab
from clusterlab.ingest.unmatched import CONTINUATION, RANK_PREFIX, _template_sql, unmatched

# what continues an error line in the demo's logs: C++ frames, where it was raised, NCCL's detail, torchrun's title
CONTINUES = r"^(?:frame #\d+: |Exception raised from |Last error:|\S+ FAILED$)"


def test_on_the_demo_bundle_no_continuation_of_a_classified_error_is_in_the_top_ten(bundle_db_copy: Path) -> None:
    with Lab(bundle_db_copy, read_only=True) as lab:
        top = lab.unmatched(limit=10)
        everything = lab.unmatched(limit=None)
        with_continued = unmatched(lab.con, limit=None, continued=True)
        kept = lab.sql("SELECT (SELECT count(*) FROM unmatched_lines) + "
                       "(SELECT count(*) FROM events WHERE kind = 'unrecognised')").rows()[0][0]
    assert top.height
    bodies = [re.sub(RANK_PREFIX, "", ex).strip() for ex in top["example"]]
    assert not [b for b in bodies if re.search(CONTINUES, b)], bodies
    assert "continues a line a rule read" not in set(top["seen_by"])
    # nothing is dropped: asked for, they are listed, after every real unknown
    assert with_continued["lines"].sum() + with_continued["continued"].sum() == kept
    rank = list(with_continued["seen_by"])
    classified = [i for i, s in enumerate(rank) if s == "continues a line a rule read"]
    assert classified and min(classified) >= everything.height
    assert any(t.startswith("Exception raised from checkTimeout at <PATH>/ProcessGroupNCCL.cpp:<NUM>")
               for t in with_continued["template"])


def _bundle(root: Path) -> Path:
    log = root / "runs" / "r7" / "attempt-1" / "train.log"
    log.parent.mkdir(parents=True)
    stamp = "[E1202 09:14:{:02d}.318270 70311 ProcessGroupNCCL.cpp:616]"
    watchdog = (f"[rank5]:{stamp.format(1)} [Rank 5] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=913, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) "
                "ran for 600345 milliseconds before timing out.")
    frames = ["[rank5]:Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 "
              "(most recent call first):",
              "[rank5]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9e (0x7fa3c1d2e4f6 in "
              "/opt/conda/lib/python3.11/site-packages/torch/lib/libc10.so)"]
    unknown = ["kestrel-loader: shard 213 checksum error on read from tern-014",
               "Exception raised from verify at /src/kestrel/loader.cc:88 (most recent call first):",
               "frame #0: kestrel::Error::Error(std::string) + 0x1f (0x7f00a1b2c3d4 in /opt/kestrel/lib/libkestrel.so)",
               "frame #1: kestrel::Shard::read() + 0x2c0 (0x7f00a1b2c9e0 in /opt/kestrel/lib/libkestrel.so)"]
    log.write_text("\n".join(["step 1 ok", watchdog, *frames, "step 2 ok", *unknown,
                              "kestrel-loader: shard 9 checksum error on read from tern-003"]) + "\n")
    return root


def test_continuations_are_grouped_with_the_line_they_continue(tmp_path: Path) -> None:
    with Lab(":memory:") as lab:
        lab.ingest(_bundle(tmp_path))
        assert lab.sql("SELECT count(*) FROM events WHERE text LIKE '%Watchdog caught%'").rows()[0][0] >= 1
        u = lab.unmatched(limit=None)
        every = unmatched(lab.con, limit=None, continued=True)
    rows = {r["template"]: r for r in u.iter_rows(named=True)}
    # the unknown error with the continuation lines kept of it (frame #1 names no trouble: never kept), its two
    # occurrences one template
    err = rows["kestrel-loader: shard <NUM> checksum error on read from <HOST>"]
    assert err["lines"] == 2 and err["continued"] == 2 and err["seen_by"] == "no rule"
    # no frame, no "raised from" of either error is a template of its own
    assert not [t for t in rows if re.search(r"^(?:frame|Exception raised)", t)], list(rows)
    # the watchdog's own continuation lines belong to the classified error: listed only when asked, last
    last = every.filter(every["seen_by"] == "continues a line a rule read")
    assert set(last["template"]) == {
        "Exception raised from checkTimeout at <PATH>/ProcessGroupNCCL.cpp:<NUM> (most recent call first):",
        "frame #<NUM>: c10::Error::Error(c10::SourceLocation, std::string) + <HEX> (<HEX> in <PATH>/libc10.so)"}
    assert list(every["seen_by"])[-2:] == ["continues a line a rule read"] * 2


@pytest.mark.parametrize(("line", "template"), [
    ("link partner east-007 unreachable, retry 3", "link partner <HOST> unreachable, retry <NUM>"),
    ("peer gpu-node-17 timed out", "peer <HOST> timed out"),
    ("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96",
     "frame #<NUM>: c10::Error::Error(c10::SourceLocation, std::string) + <HEX>"),
    ("EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro",
     "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro"),
    ("rank3 failed; local_rank2 too", "rank<NUM> failed; local_rank<NUM> too"),
    ("Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618",
     "Exception raised from checkTimeout at <PATH>/ProcessGroupNCCL.cpp:<NUM>"),
    ("(0x7f5d65561946 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
     "(<HEX> in <PATH>/libc10.so)"),
    ("could not find the metadata file /lustre/ckpt/llama8b/latest_checkpointed_iteration.txt",
     "could not find the metadata file <PATH>/latest_checkpointed_iteration.txt"),
    ("cannot open /etc/hosts", "cannot open <PATH>/hosts"),
])
def test_masks_a_host_as_a_host_and_nothing_else(line: str, template: str) -> None:
    got = duckdb.sql(f"SELECT {_template_sql('t')} FROM (SELECT $t AS t)", params={"t": line}).fetchall()[0][0]
    assert got == template


def test_a_host_the_bundle_names_is_masked_whatever_its_shape(tmp_path: Path) -> None:
    node = tmp_path / "nodes" / "kestrel"  # no digits: the bundle's layout names it a host
    node.mkdir(parents=True)
    (node / "dmesg").write_text("2026-12-02T09:00:01,000000+00:00 acmefw: link to kestrel42a failed, error 0x3\n"
                                "2026-12-02T09:00:02,000000+00:00 acmefw: link to tern-009 failed, error 0x4\n")
    (tmp_path / "nodes" / "kestrel42a").mkdir()
    (tmp_path / "nodes" / "kestrel42a" / "dmesg").write_text(
        "2026-12-02T09:00:03,000000+00:00 acmefw: link to kestrel failed, error 0x5\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        u = lab.unmatched(limit=None)
    assert list(u["template"]) == ["<TS> acmefw: link to <HOST> failed, error <HEX>"], list(u["template"])
    assert u["lines"][0] == 3


def test_continuation_shapes() -> None:
    for body in ("frame #12: <unknown function> + 0xd3b75 (0x7f1 in /lib/libstdc++.so.6)", "Last error:",
                 'File "/opt/app/train.py", line 88, in main', "pretrain_gpt.py FAILED",
                 "Exception raised from run at /src/x.cc:3 (most recent call first):"):
        assert re.search(CONTINUATION, body), body
    for body in ("RuntimeError: NCCL error", "FAILED to open", "frame rate dropped"):
        assert not re.search(CONTINUATION, body), body
