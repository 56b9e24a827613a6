"""`clusterlab watch`: live detection over files that grow between ticks, alerts, and metrics."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as text_format_families
from watch_logs import link_down, step_ts, write_steps, xid79

from clusterlab import Lab, store
from clusterlab.watch import Alerter, Watcher, WatchSettings
from clusterlab.watch import metrics as prom

NOW = dt.datetime(2026, 12, 5, 8, 0, 0)  # the watch's clock
SETTINGS = WatchSettings(hang_min_s=30.0, hang_steps=10.0)  # 10 x 2 s steps < 30 s: the limit is 30 s


def later(s: float) -> dt.datetime:
    return NOW + dt.timedelta(seconds=s)


def watcher(root: Path, lines: list[str] | None = None, con=None, **alerts) -> Watcher:
    con = con or store.connect(":memory:")
    sink = lines if lines is not None else []
    return Watcher(None, "tiny", [root], con=con, settings=SETTINGS, with_ledger=False,
                   alerter=Alerter(echo=sink.append, **alerts), say=sink.append)


def two_ranks(root: Path, last: int, last1: int | None = None) -> None:
    write_steps(root, 0, "node1", 1, last)
    write_steps(root, 1, "node2", 1, last if last1 is None else last1)


def test_hang_names_the_rank_whose_records_stopped_first(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    lines: list[str] = []
    w = watcher(tmp_path, lines)
    assert w.tick(NOW).new == []
    write_steps(tmp_path, 0, "node1", 21, 25)  # rank 0 goes on; rank 1 (node2) stops at step 22
    write_steps(tmp_path, 1, "node2", 21, 22)
    assert w.tick(later(5)).new == []  # progress (the records' own times are older: from the tick before, NOW)
    assert w.tick(later(25)).new == []  # 25 s without progress: under the limit
    [ev] = w.tick(later(40)).new
    assert (ev["kind"], ev["host"], ev["ranks"], ev["hosts"]) == ("hang", "node2", [1], ["node2"])
    assert ev["limit_s"] == 30.0 and ev["idle_s"] == 40.0
    [last] = ev["evidence"]
    assert (last["file"], last["line"], last["step"]) == (str(tmp_path / "steps" / "rank-1.jsonl"), 22, 22)
    assert w.tick(later(45)).new == []  # the same hang is not detected twice
    assert len([x for x in lines if "HANG run=tiny host=node2" in x]) == 1
    assert w.state.to_dict()["ranks"][1]["last_step"] == 22


def test_hang_limit_is_k_baseline_steps_when_longer_than_t(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    w = watcher(tmp_path)
    w.settings = WatchSettings(hang_min_s=5.0, hang_steps=10.0)  # 10 x 2 s = 20 s beats T = 5 s
    w.tick(NOW)
    assert w.tick(later(19)).new == []
    [ev] = w.tick(later(21)).new
    assert ev["limit_s"] == 20.0 and ev["stopped_together"]  # all ranks at step 20: none named first


def test_xid_on_a_job_host_is_a_failure_with_root_cause_and_a_node_event(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    w = watcher(tmp_path)
    w.tick(NOW)
    kern = tmp_path / "kernel.log"
    kern.write_text(xid79(step_ts(20) + dt.timedelta(seconds=1), "node2")
                    + link_down(step_ts(20) + dt.timedelta(seconds=5), "node9"))  # node9 is not the job's
    new = w.tick(later(5)).new
    by_kind = {e["kind"]: e for e in new}
    assert sorted(by_kind) == ["failure", "node"]
    fail = by_kind["failure"]
    assert (fail["host"], fail["failure_mode"]) == ("node2", "gpu_fell_off_bus")
    assert fail["evidence"][0]["line"] == 1 and "Xid" in fail["evidence"][0]["text"]
    assert by_kind["node"]["xid"] == 79 and by_kind["node"]["host"] == "node2"
    with open(kern, "a") as f:  # a link going down on a job host later is a node event of its own
        f.write(link_down(step_ts(21), "node1"))
    [node] = [e for e in w.tick(later(6)).new if e["kind"] == "node"]
    assert node["host"] == "node1" and node["failure_mode"] == "network"


def test_a_rotated_kernel_log_keeps_its_xid_and_alerts_it_once(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    con = store.connect(":memory:")
    w = watcher(tmp_path, con=con)
    w.tick(NOW)
    kern = tmp_path / "kern.log"
    kern.write_text(xid79(step_ts(20) + dt.timedelta(seconds=1), "node2"))
    first = [e for e in w.tick(later(5)).new if e["kind"] == "node"]
    assert [e["xid"] for e in first] == [79]
    kern.rename(tmp_path / "kern.log.1")  # logrotate `create`: the old log renamed, a new one begun
    kern.write_text(link_down(step_ts(20) + dt.timedelta(seconds=9), "node9"))
    again = w.tick(later(6)).new
    assert not [e for e in again if e.get("xid") == 79]  # neither lost for a tick nor alerted again
    assert con.execute("SELECT count(*) FROM events WHERE xid = 79").fetchone()[0] == 1


def test_straggler_names_the_slow_host_and_a_slowdown_is_said_once(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    w = watcher(tmp_path)
    w.tick(NOW)
    write_steps(tmp_path, 0, "node1", 21, 30)
    write_steps(tmp_path, 1, "node2", 21, 30, compute_s=2.4)  # node2 computes 60% slower from step 21
    new = w.tick(later(5)).new
    [strag] = [e for e in new if e["kind"] == "straggler"]
    assert strag["host"] == "node2" and strag["incident_id"].endswith(":straggler:node2:21")
    assert not any(e["kind"] in ("hang", "failure") for e in new)


def test_slowdown_of_the_whole_job_against_its_baseline(tmp_path: Path) -> None:
    root = tmp_path
    path = root / "steps" / "rank-0.jsonl"
    path.parent.mkdir(parents=True)

    def steps(first: int, last: int, start: dt.datetime, step_s: float) -> dt.datetime:
        with open(path, "a") as f:
            for i, s in enumerate(range(first, last + 1)):
                ts = start + dt.timedelta(seconds=(i + 1) * step_s)
                f.write(json.dumps({"ts": ts.replace(tzinfo=dt.UTC).timestamp(), "rank": 0, "host": "node1",
                                     "step": s, "step_s": step_s}) + "\n")
        return ts

    end = steps(1, 30, step_ts(0), 2.0)
    w = watcher(root)
    w.tick(NOW)
    end = steps(31, 36, end, 6.0)  # 3x slower
    [slow] = [e for e in w.tick(later(5)).new if e["kind"] == "slowdown"]
    assert slow["ratio"] == pytest.approx(3.0) and slow["host"] == "node1"
    steps(37, 38, end, 6.0)
    assert [e for e in w.tick(later(10)).new if e["kind"] == "slowdown"] == []  # the same stretch: once


def test_truncated_rotated_and_late_logs(tmp_path: Path) -> None:
    two_ranks(tmp_path, 10)
    late = tmp_path / "late" / "kernel.log"
    lines: list[str] = []
    w = Watcher(None, "tiny", [tmp_path / "steps", late], con=store.connect(":memory:"), settings=SETTINGS,
                with_ledger=False, alerter=Alerter(echo=lines.append), say=lines.append)
    assert w.tick(NOW).missing == [str(late)]
    assert w.tick(later(1)).missing == [str(late)]
    assert sum("not there yet" in x for x in lines) == 1  # said once
    rank1 = tmp_path / "steps" / "rank-1.jsonl"
    rank1.write_text("")  # rotated: the file starts again, then grows
    write_steps(tmp_path, 1, "node2", 11, 14)
    write_steps(tmp_path, 0, "node1", 11, 14)
    res = w.tick(later(2))
    assert res.state.last_step == 14 and res.new == []
    late.parent.mkdir()
    late.write_text(xid79(step_ts(14), "node1"))
    assert {e["kind"] for e in w.tick(later(3)).new} == {"failure", "node"}


def test_alerts_events_file_and_program_get_the_json_and_no_shell(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    kern = tmp_path / "kernel.log"
    kern.write_text(xid79(step_ts(20), "node2").replace("name=python", "name=$(touch PWNED)\x1b[31m"))
    got = tmp_path / "got.jsonl"
    program = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')", str(got),
               "; touch PWNED2"]
    events = tmp_path / "events.jsonl"
    lines: list[str] = []
    w = watcher(tmp_path, lines, events_file=events, program=program)
    new = w.tick(NOW).new
    assert {e["kind"] for e in new} == {"failure", "node"}
    written = [json.loads(x) for x in events.read_text().splitlines()]
    fed = [json.loads(x) for x in got.read_text().splitlines()]
    assert [e["key"] for e in written] == [e["key"] for e in fed] == [e["key"] for e in new]
    assert "$(touch PWNED)\x1b[31m" in fed[1]["evidence"][0]["text"]  # the program gets the text as it was
    assert not list(tmp_path.glob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    assert all("\x1b" not in x for x in lines)


def test_rate_limit_and_dedup_across_a_restart(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    kern = tmp_path / "kernel.log"
    kern.write_text("".join(link_down(step_ts(20) + dt.timedelta(seconds=i), "node2") for i in range(4)))
    clock = [0.0]
    lines: list[str] = []
    con = store.connect(":memory:")
    w = watcher(tmp_path, lines, con=con, clock=lambda: clock[0], repeat_s=60.0)
    res = w.tick(NOW)

    def nodes(events: list[dict]) -> list[dict]:
        return [e for e in events if e["kind"] == "node"]

    assert len(nodes(res.new)) == 4 and len(nodes(res.alerted)) == 1  # four link-down lines: one alert a minute
    clock[0] = 61.0
    with open(kern, "a") as f:
        f.write(link_down(step_ts(21), "node2"))
    res = w.tick(later(1))
    assert len(nodes(res.new)) == 1 and len(nodes(res.alerted)) == 1 and "+3 held back" in lines[-1]
    again = watcher(tmp_path, con=con)  # a restarted watch on the same store: nothing new to say
    assert again.tick(later(2)).new == []


def test_metrics_text_parses_back_and_serves_on_loopback_only(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    (tmp_path / "kernel.log").write_text(xid79(step_ts(20), "node2"))
    con = store.connect(":memory:")
    w = Watcher(None, "tiny", [tmp_path], con=con, settings=SETTINGS, alerter=Alerter(echo=lambda _: None))
    w.tick(NOW)
    text = prom.text(prom.families(con, "tiny"))
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams["clusterlab_last_step"].samples[0].value == 20
    assert fams["clusterlab_step_rate_ratio"].samples[0].value == pytest.approx(1.0)
    assert {s.labels["failure_mode"] for s in fams["clusterlab_open_incidents"].samples} == {"gpu_fell_off_bus"}
    assert {s.labels["kind"]: s.value for s in fams["clusterlab_watch_detections"].samples
            if s.name.endswith("_total")} == {"failure": 1, "node": 1}
    assert 0.0 <= fams["clusterlab_goodput_ratio"].samples[0].value <= 1.0
    textfile = tmp_path / "clusterlab.prom"
    prom.write_textfile(str(textfile), prom.families(con, "tiny"))
    assert "clusterlab_last_step" in {f.name for f in text_format_families(textfile.read_text())}
    dashboard = (Path(__file__).resolve().parent.parent / "docs" / "grafana-dashboard.json").read_text()
    queried = {re.sub(r"_total$", "", m) for m in re.findall(r"clusterlab_[a-z_]+", dashboard)}
    assert queried and queried <= set(fams)  # the sample dashboard asks only for metrics that exist
    with pytest.raises(ValueError, match="not loopback"):
        prom.listen_address("0.0.0.0:9200", any_host=False)
    assert prom.listen_address("9200", any_host=False) == ("127.0.0.1", 9200)
    snap, server = prom.serve("127.0.0.1", 0)
    try:
        snap.metrics = prom.families(con, "tiny")
        port = server.server_address[1]
        served = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert "clusterlab_last_step" in {f.name for f in text_format_families(served)}
    finally:
        server.shutdown()


def test_lab_watch_lets_go_of_the_file_and_takes_it_back(tmp_path: Path) -> None:
    two_ranks(tmp_path, 12)
    db = tmp_path / "lab.duckdb"
    with Lab(db) as lab:
        w = lab.watch("tiny", [tmp_path / "steps"], interval=0.1, ticks=2, with_ledger=False)
        assert w.state.last_step == 12 and w.state.hosts == ["node1", "node2"]
        assert lab.sql("SELECT last_step FROM watch_state WHERE run = 'tiny'")["last_step"][0] == 12
    assert not Path(str(db) + store.WATCH_MARK).exists()


def test_alerts_saved_but_not_sent_before_a_kill_are_sent_on_the_next_start(tmp_path: Path) -> None:
    two_ranks(tmp_path, 20)
    con = store.connect(":memory:")
    w = watcher(tmp_path, con=con)
    w.tick(NOW)

    def killed(line: str) -> None:
        raise KeyboardInterrupt  # the process dies between saving the detections and alerting them

    w.alerter.echo = killed
    (tmp_path / "kernel.log").write_text(xid79(step_ts(20) + dt.timedelta(seconds=1), "node2"))
    with pytest.raises(KeyboardInterrupt):
        w.tick(later(5))
    lines: list[str] = []
    again = watcher(tmp_path, lines, con=con)  # the watch started again
    res = again.tick(later(10))
    assert res.new == []  # nothing detected anew ...
    assert sorted(e["kind"] for e in res.alerted) == ["failure", "node"]  # ... and what was saved is alerted
    assert sum("Xid 79" in ln or "gpu_fell_off_bus" in ln for ln in lines) >= 1
    assert again.tick(later(15)).alerted == []  # once
