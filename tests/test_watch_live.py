"""A live `clusterlab watch` process: other processes read the same database meanwhile, never half a tick,
and SIGTERM stops it cleanly with its state kept."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from watch_logs import write_steps

from clusterlab import Lab, store
from clusterlab.widgets import Explorer

CLI = [sys.executable, "-m", "clusterlab.cli"]


def test_readers_see_whole_ticks_while_watch_runs_and_sigterm_keeps_its_state(tmp_path: Path) -> None:
    db = tmp_path / "live.duckdb"
    write_steps(tmp_path, 0, "node1", 1, 5)
    write_steps(tmp_path, 1, "node2", 1, 5)
    watch = subprocess.Popen([*CLI, "--db", str(db), "watch", "--run", "tiny", str(tmp_path / "steps"),
                              "--interval", "0.5", "--events", str(tmp_path / "events.jsonl")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not Path(str(db) + store.WATCH_MARK).exists() or not db.exists():
            assert watch.poll() is None and time.monotonic() < deadline, watch.communicate()
            time.sleep(0.1)
        seen, step = [], 5
        while len(seen) < 3 and time.monotonic() < deadline:
            step += 1
            write_steps(tmp_path, 0, "node1", step, step)
            write_steps(tmp_path, 1, "node2", step, step)
            try:
                with Lab(db, read_only=True) as lab:  # waits out a tick's write instead of failing
                    state = lab.sql("SELECT last_step FROM watch_state WHERE run = 'tiny'")
                    stored = lab.sql("SELECT max(step) AS s FROM rank_steps WHERE run = 'tiny'")["s"][0]
            except duckdb.CatalogException:  # the first tick has not made the tables yet
                continue
            if state.height:  # the state and the rows it was read from come from the same whole tick
                assert state["last_step"][0] == stored
                # NOTE: counted once a tick: several reads can fall between two ticks (a read waits out a tick's
                # write, then the next ones find the file free), and they would see the same tick
                if not seen or stored != seen[-1]:
                    seen.append(stored)
            time.sleep(0.05)
        assert len(seen) == 3 and seen[-1] > 5
        res = subprocess.run([*CLI, "--db", str(db), "incidents", "--json"], capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout) == []
        live = Explorer.live(str(db), run="tiny")  # the Explorer on a snapshot: the watch goes on meanwhile
        try:
            first = live.state_frame["last_step"][0]
            assert live.explorer.run.value == "tiny" and live.explorer.last_error is None
            step += 1
            write_steps(tmp_path, 0, "node1", step, step)
            write_steps(tmp_path, 1, "node2", step, step)
            until = time.monotonic() + 60
            while live.state_frame["last_step"][0] < step and time.monotonic() < until:
                time.sleep(0.5)
                live.refresh()
            assert live.state_frame["last_step"][0] == step > first
        finally:
            live.close()
    finally:
        watch.send_signal(signal.SIGTERM)
        out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert "watch: stopped; run tiny at step" in err
    assert not Path(str(db) + store.WATCH_MARK).exists()
    with Lab(db, read_only=True) as lab:
        assert lab.sql("SELECT last_step FROM watch_state")["last_step"][0] >= seen[-1]
    res = subprocess.run([*CLI, "--db", str(db), "metrics", "--run", "tiny"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    fams = {f.name: f for f in text_string_to_metric_families(res.stdout)}
    assert fams["clusterlab_last_step"].samples[0].value >= seen[-1]
