"""What a watch says besides its alerts: ingest's complaints about a file once (until they change), a gzip cut
short and a record torn in half, what the rate limit held back, and a last line that means something."""

from __future__ import annotations

import datetime as dt
import gzip
import re
from pathlib import Path

from click.testing import CliRunner
from watch_logs import link_down, step_ts, write_steps, xid79

from clusterlab import store
from clusterlab.cli import main
from clusterlab.watch import Alerter, Watcher, WatchSettings
from conftest import ROOT

NOW = dt.datetime(2026, 12, 5, 8, 0, 0)


def watcher(root: Path, lines: list[str]) -> Watcher:
    return Watcher(None, "tiny", [root], con=store.connect(":memory:"), settings=WatchSettings(hang_min_s=30.0),
                   with_ledger=False, alerter=Alerter(echo=lines.append), say=lines.append)


def ticks(w: Watcher, first: int, n: int) -> None:
    for i in range(first, first + n):
        w.tick(NOW + dt.timedelta(seconds=i))


def test_a_broken_file_is_said_once_until_what_it_says_changes(tmp_path: Path) -> None:
    """A corrupt gzip (and a run.toml that is no TOML) are read again every tick: said once each, not 3 times;
    said again when the damage changes, and after the file was mended and broke again."""
    write_steps(tmp_path, 0, "node1", 1, 5)
    junk = tmp_path / "kern.log.gz"
    junk.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 10)
    (tmp_path / "run.toml").write_text("name = = 1\n")
    lines: list[str] = []
    w = watcher(tmp_path, lines)
    ticks(w, 0, 3)
    assert sum("kern.log.gz: gzip corrupt" in x for x in lines) == 1
    assert sum("run.toml: not valid TOML" in x for x in lines) == 1
    whole = gzip.compress(xid79(step_ts(5), "node1").encode())
    junk.write_bytes(whole[:12])  # another damage: the stream ends in its header
    ticks(w, 3, 2)
    assert sum("kern.log.gz: gzip ends before its end of stream: nothing in it could be read" in x
               for x in lines) == 1
    junk.write_bytes(whole)  # mended: read, nothing to say
    ticks(w, 5, 2)
    junk.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 10)
    ticks(w, 7, 2)
    assert sum("kern.log.gz: gzip corrupt" in x for x in lines) == 2
    assert sum("run.toml" in x for x in lines) == 1


def test_a_gzip_cut_short_and_a_record_torn_in_half_are_said(tmp_path: Path) -> None:
    """What ingest reports about a file it did read (not only files it could not) reaches the watch's output."""
    write_steps(tmp_path, 0, "node1", 1, 10)
    torn = write_steps(tmp_path, 1, "node2", 1, 10)
    body = torn.read_bytes()
    torn.write_bytes(body[: len(body) // 2] + b"\n" + body[len(body) // 2 + 40:])
    kern = gzip.compress("".join(xid79(step_ts(5) + dt.timedelta(seconds=i), "node1") for i in range(2000)).encode())
    (tmp_path / "kern.log.gz").write_bytes(kern[: len(kern) // 2])
    lines: list[str] = []
    w = watcher(tmp_path, lines)
    ticks(w, 0, 3)
    cut = [x for x in lines if "kern.log.gz:" in x]
    assert len(cut) == 1 and re.search(r"kern\.log\.gz:\d+: gzip ends before its end of stream: read up to this "
                                       r"line, the rest is lost", cut[0])
    tear = [x for x in lines if "rank-1.jsonl:" in x]
    assert len(tear) == 1 and "not a step record" in tear[0]


def test_the_rate_limit_says_what_it_held_back() -> None:
    """Three link-down lines of node2 within the repeat time: one alert; the next one sent names the two held
    back by kind and host, with the newest's words."""
    lines: list[str] = []
    clock = [0.0]
    a = Alerter(echo=lines.append, repeat_s=60.0, clock=lambda: clock[0])
    downs = [{"key": f"n{i}", "run": "tiny", "kind": "node", "host": "node2",
              "message": f"link down on node2 ({link_down(step_ts(i), 'node2').split('kernel: ')[1].strip()}) #{i}"}
             for i in range(3)]
    assert len(a.send(downs)) == 1 and a.held_back == 2
    clock[0] = 5.0
    a.send([{"key": "f", "run": "tiny", "kind": "failure", "host": "node1", "message": "gpu_fell_off_bus on node1"}])
    assert lines[-1].endswith('(+2 held back by the rate limit: 2 NODE on node2, the last "link down on node2 '
                              '(mlx5_core 0000:3b:00.0 ib0: Link down) #2"; all in watch_events)')
    assert a.held_back == 0


def test_the_last_line_says_where_the_run_got_or_that_none_of_it_was_seen(tmp_path: Path) -> None:
    """`watch --run nope` over files with no step of it: not 'at step None'."""
    (tmp_path / "kern.log").write_text(xid79(step_ts(5), "node1"))
    res = CliRunner().invoke(main, ["--db", str(tmp_path / "w.duckdb"), "watch", "--run", "nope", str(tmp_path),
                                    "--ticks", "1", "--interval", "0.1"])
    assert res.exit_code == 0, res.output
    last = res.stderr.strip().splitlines()[-1]
    assert "None" not in last and last.startswith("watch: stopped; no step of run nope seen in the watched paths")
    write_steps(tmp_path / "job", 0, "node1", 1, 7)
    res = CliRunner().invoke(main, ["--db", str(tmp_path / "w2.duckdb"), "watch", "--run", "tiny",
                                    str(tmp_path / "job"), "--ticks", "1", "--interval", "0.1"])
    assert res.stderr.strip().splitlines()[-1] == "watch: stopped; run tiny at step 7 (attempt 1)"


def test_the_readme_says_torchruns_output_must_land_in_a_watched_folder() -> None:
    readme = (ROOT / "README.md").read_text()
    watch = readme[readme.index("## Watching a running job"):]
    watch = watch[: watch.index("\n## ", 1)]
    assert "torchrun's output must land in a watched folder" in watch
    assert "tee runs/tiny/train.log" in watch
