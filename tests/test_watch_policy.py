"""The watch's relaunch policy: its file, its drains, and the hourly limit that stops a relaunch loop."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_relaunch import write_bundle

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.ingest.reader import InputError
from clusterlab.relaunch import relaunch_plan
from clusterlab.watch import Alerter, Watcher
from clusterlab.watch.policy import Policy, drains, load_policy, refusal
from clusterlab.watch.relaunch import PolicyRelaunch

NOW = dt.datetime(2026, 11, 25, 12, 0, 0)


def test_policy_file_is_read_and_bad_keys_name_the_file(tmp_path: Path) -> None:
    good = tmp_path / "policy.toml"
    good.write_text('max_relaunches_per_hour = 1\ndrain_modes = ["gpu_fell_off_bus"]\ncancel_hung_job = false\n')
    p = load_policy(good)
    assert (p.max_relaunches_per_hour, p.drain_modes, p.cancel_hung_job) == (1, ("gpu_fell_off_bus",), False)
    bad = tmp_path / "bad.toml"
    bad.write_text("max_relaunch_per_hour = 1\n")
    with pytest.raises(InputError, match=f"{bad}: unknown policy key 'max_relaunch_per_hour'"):
        load_policy(bad)
    bad.write_text('max_relaunches_per_hour = "many"\n')
    with pytest.raises(InputError, match="expected int"):
        load_policy(bad)


def test_the_hourly_limit_stops_a_relaunch_loop(tmp_path: Path) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(write_bundle(tmp_path / "b"))
        plan = relaunch_plan(lab.con, "tiny")
        ev = {"kind": "failure", "run": "tiny"}
        loose = Policy(max_relaunches_per_hour=2, require_intact_checkpoint=False)
        assert refusal(loose, lab.con, ev, plan, NOW) is None
        assert "no checkpoint verified" in refusal(Policy(), lab.con, ev, plan, NOW)
        assert "not on a straggler" in refusal(loose, lab.con, {"kind": "straggler", "run": "tiny"}, plan, NOW)
        no_spare = Policy(require_intact_checkpoint=False, use_spare_nodes=False)
        assert "in place of node2, and the policy allows no spare" in refusal(no_spare, lab.con, ev, plan, NOW)
        assert [d["host"] for d in drains(loose, plan)] == ["node2"]  # Xid 79: gpu_fell_off_bus drains
        assert drains(Policy(drain_modes=("network",)), plan) == []
        for minutes, result in ((90, "completed"), (50, "running"), (20, "refused"), (10, "job_failed")):
            lab.con.execute("INSERT INTO relaunches (incident_id, run, started_at, result) VALUES (?, 'tiny', ?, ?)",
                            [f"tiny:{minutes}", NOW - dt.timedelta(minutes=minutes), result])
        why = refusal(loose, lab.con, ev, plan, NOW)  # two launches within the hour (a refusal launched nothing)
        assert why and "2 relaunches of tiny in the last hour" in why
        assert refusal(loose, lab.con, ev, plan, NOW + dt.timedelta(minutes=15)) is None


def _watch_with_relaunch(tmp_path: Path, mode: str, lines: list[str]) -> tuple[Watcher, PolicyRelaunch]:
    bundle = write_bundle(tmp_path / "b")
    db = str(tmp_path / "db.duckdb")
    hook = PolicyRelaunch(db, Policy(require_intact_checkpoint=False), mode, say=lines.append)
    w = Watcher(db, "tiny", [bundle], alerter=Alerter(echo=lines.append), after_close=[hook], say=lines.append,
                with_ledger=False)
    return w, hook


def test_ask_proposes_the_plan_and_launches_nothing(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    policy, db, events = tmp_path / "policy.toml", tmp_path / "db.duckdb", tmp_path / "events.jsonl"
    policy.write_text("require_intact_checkpoint = false\n")
    res = CliRunner().invoke(main, ["--db", str(db), "watch", "--run", "tiny", str(bundle), "--ticks", "1",
                                    "--relaunch", "ask", "--policy", str(policy), "--events", str(events)])
    assert res.exit_code == 0, res.output + res.stderr
    [said] = [x for x in res.stderr.splitlines() if x.startswith("relaunch (ask)")]
    assert ": proposed: " in said and "drain node2" in said and "--exclude=node2" in said
    assert "FAILURE run=tiny host=node2 gpu_fell_off_bus" in res.stdout
    assert [json.loads(x)["kind"] for x in events.read_text().splitlines()] == ["failure", "node"]
    with Lab(db, read_only=True) as lab:
        assert lab.sql("SELECT * FROM relaunches").height == 0


def test_an_unreachable_scheduler_is_said_and_tried_again_never_relaunched_blind(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    # a real configuration whose controller does not answer (nothing listens on port 1): sinfo and squeue
    # fail at once ("Unable to contact slurm controller"), as when the controller is down
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=gone\nSlurmctldHost=localhost\nSlurmctldPort=1\nTCPTimeout=1\nMessageTimeout=1\n"
                    "NodeName=node1 CPUs=1 State=UNKNOWN\nPartitionName=main Nodes=node1 Default=YES\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    lines: list[str] = []
    w, hook = _watch_with_relaunch(tmp_path, "auto", lines)
    w.tick()
    assert hook.outcomes == [] and [e["kind"] for e in hook._pending] == ["failure"]
    assert any("scheduler cannot be reached" in x and "trying again next tick" in x for x in lines)
    w.tick()  # nothing new detected, and the failure is tried again
    assert sum("scheduler cannot be reached" in x for x in lines) == 2 and hook._pending
    with Lab(w.db, read_only=True) as lab:
        assert set(lab.sql("SELECT result FROM relaunches")["result"]) <= {"refused"}  # nothing launched
