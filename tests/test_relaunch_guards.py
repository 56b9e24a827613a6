"""Relaunch guards: nothing to relaunch after a completed run, an unreachable scheduler stops the relaunch,
hosts from log text reach a scheduler command only when the scheduler lists them, and one incident is
launched once even from concurrent executions."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result
from slurm_cluster import _free_ports
from test_relaunch import lab_of, write_bundle

from clusterlab import Lab, store
from clusterlab.cli import main
from clusterlab.cli.relaunch import relaunch
from clusterlab.relaunch import Execution, UnsafeValueError, check_host, execute, relaunch_plan
from clusterlab.relaunch.backends.base import run_argv
from clusterlab.relaunch.execute import RelaunchRefused

main.add_command(relaunch)


@pytest.fixture(scope="module")
def bundle_db_path(bundle_db_copy) -> str:
    return str(bundle_db_copy)


# ---------------------------------------------------------------- a completed run has nothing to relaunch

def test_a_completed_sample_run_is_not_relaunched(tmp_path: Path, bundle_db_path: str) -> None:
    db = tmp_path / "db.duckdb"
    shutil.copy(bundle_db_path, db)  # --execute writes its audit row: a copy of the sample's store
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "mm7b-sft"])
    assert res.exit_code == 0
    assert "nothing to relaunch: run mm7b-sft completed: attempt 2" in res.output and "command: (none)" in res.output
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "mm7b-sft", "--execute"])
    assert res.exit_code == 2 and "relaunch refused: nothing to relaunch" in res.output
    with Lab(db, read_only=True) as lab:
        rows = lab.sql("SELECT incident_id, result, detail FROM relaunches")
    assert rows["result"].to_list() == ["refused"] and "reached step 600 of the run's 600" in rows["detail"][0]


def test_completion_needs_the_total_reached_and_no_failure(tmp_path: Path) -> None:
    with lab_of(write_bundle(tmp_path / "done", steps=12, total=12, xid=False), tmp_path / "a.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.command == [] and plan.drain == []
        assert "reached step 12 of the run's 12" in plan.nothing_to_relaunch
        with pytest.raises(RelaunchRefused, match="nothing to relaunch"):
            execute(lab.con, plan)
        assert lab.sql("SELECT result FROM relaunches")["result"].to_list() == ["refused"]
    # the total reached, but the attempt ended on an Xid 79: that failure is what a relaunch answers
    with lab_of(write_bundle(tmp_path / "xid", steps=12, total=12), tmp_path / "b.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.nothing_to_relaunch is None and plan.command[0] == "sbatch"
    # no failure on record, but short of the total: not completed, and the plan says it cannot tell
    with lab_of(write_bundle(tmp_path / "short", steps=12, total=20, xid=False), tmp_path / "c.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.nothing_to_relaunch is None and plan.command[0] == "sbatch"
        assert any("nothing says it completed" in w for w in plan.warnings)


# ---------------------------------------------------------------- a fake Slurm made of real programs on PATH

FAKE_COMMAND = """#!{python}
# A stand-in for one Slurm client command: records its arguments, answers as answers.json says.
import json, sys
from pathlib import Path
here, name = Path(__file__).resolve().parent, Path(sys.argv[0]).name
with open(here / "calls.jsonl", "a") as f:
    f.write(json.dumps([name, *sys.argv[1:]]) + "\\n")
answer = json.loads((here / "answers.json").read_text()).get(name, {{}})
sys.stdout.write(answer.get("out", ""))
sys.stderr.write(answer.get("err", ""))
sys.exit(answer.get("rc", 0))
"""
NODES = "node1 idle main*\nnode2 idle main*\nnode3 idle main*\nnode4 idle main*\n"


class FakeSlurmOnPath:
    """sinfo, sbatch, scontrol and squeue as small programs first on PATH, each answering what it is told."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        bin_dir.mkdir(parents=True, exist_ok=True)
        self.answers = {"sinfo": {"out": NODES}, "sbatch": {"out": "42\n"}, "squeue": {"out": "RUNNING\n"}}
        for name in ("sinfo", "sbatch", "scontrol", "squeue"):
            (bin_dir / name).write_text(FAKE_COMMAND.format(python=sys.executable))
            (bin_dir / name).chmod(0o755)
        self.answer()

    def answer(self, **answers: dict) -> None:
        self.answers.update(answers)
        (self.bin / "answers.json").write_text(json.dumps(self.answers))

    def calls(self) -> list[list[str]]:
        log = self.bin / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def launches(self) -> int:
        return sum(c[0] == "sbatch" or c[:2] == ["scontrol", "requeue"] for c in self.calls())

    def scheduler_writes(self) -> list[list[str]]:
        """Every command that changes the scheduler's state (drain, submit, requeue)."""
        return [c for c in self.calls() if c[0] == "sbatch" or c[:2] in (["scontrol", "update"],
                                                                          ["scontrol", "requeue"])]


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSlurmOnPath:
    fake = FakeSlurmOnPath(tmp_path / "fake-bin")
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    return fake


def execute_cli(db: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "tiny", "--execute", "--watch", "0",
                                     *extra])


# ---------------------------------------------------------------- hosts from log text and the scheduler's own list

@pytest.mark.parametrize("bad", ["ALL", "all", "All", "DEFAULT", "none", "NULL", "node[1-3]", "node1,node2",
                                 "node1 node2", "node*", "node?"])
def test_scheduler_keywords_and_hostlist_expressions_are_not_hostnames(bad: str) -> None:
    with pytest.raises(UnsafeValueError, match="refusing host"):
        check_host(bad)


def test_a_log_naming_host_ALL_drains_nothing_and_submits_nothing(tmp_path: Path,
                                                                  fake_slurm: FakeSlurmOnPath) -> None:
    bundle = write_bundle(tmp_path / "b", host="ALL", kernel_host="ALL")  # a syslog line names its host
    db = tmp_path / "db.duckdb"
    with lab_of(bundle, db) as lab:
        assert "ALL" in lab.incidents("tiny")["host"].to_list()  # the evidence keeps what the log said
        with pytest.raises(UnsafeValueError, match="'ALL'.*scheduler keyword"):
            relaunch_plan(lab.con, "tiny")
    res = execute_cli(db)
    assert res.exit_code == 2 and "refusing host 'ALL'" in res.output and "scheduler keyword" in res.output
    assert fake_slurm.scheduler_writes() == []


def test_a_host_the_scheduler_does_not_list_reaches_no_scheduler_command(tmp_path: Path,
                                                                        fake_slurm: FakeSlurmOnPath) -> None:
    db = tmp_path / "db.duckdb"
    with lab_of(write_bundle(tmp_path / "b", host="gpu-ghost-7"), db) as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.drain[0]["host"] == "gpu-ghost-7" and "--exclude=gpu-ghost-7" in plan.command
    res = execute_cli(db, "--json")
    assert res.exit_code == 0, res.output
    ex = json.loads(res.output)["executed"]
    assert ex["refused_hosts"] == [{"host": "gpu-ghost-7", "reason": "not a node the scheduler lists"}]
    assert fake_slurm.scheduler_writes() == [["sbatch", "--parsable", "--job-name=tiny", "--nodes=1", "job.sbatch"]]
    with Lab(db, read_only=True) as lab:
        row = lab.sql("SELECT command, detail, plan_json FROM relaunches").row(0, named=True)
    assert row["command"] == fake_slurm.scheduler_writes()[0]  # the audit row holds what ran
    assert "gpu-ghost-7" in row["detail"] and "not a node the scheduler lists" in row["plan_json"]
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "tiny"])  # the plan itself still says it
    assert "drain   gpu-ghost-7" in res.output


@pytest.mark.parametrize(("launch", "sinfo", "reason"), [
    ("sbatch --partition=gpu --nodes=1 job.sbatch", "node1 idle gpu\nnode2 idle cpu*\nnode2 idle debug\n",
     "not a node of partition gpu"),
    ("sbatch --nodes=1 job.sbatch", "node1 idle main*\nnode2 idle debug\n", "not a node of partition main"),
])
def test_a_host_outside_the_jobs_partition_is_not_drained(tmp_path: Path, fake_slurm: FakeSlurmOnPath, launch: str,
                                                          sinfo: str, reason: str) -> None:
    fake_slurm.answer(sinfo={"out": sinfo})
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b", launch_command=launch), db).close()
    res = execute_cli(db)
    assert res.exit_code == 0, res.output
    assert f"refused host node2: {reason}" in res.output
    assert fake_slurm.scheduler_writes() == [["sbatch", "--parsable", *launch.split()[1:]]]


def test_a_host_the_scheduler_lists_in_the_jobs_partition_is_drained_and_excluded(
        tmp_path: Path, fake_slurm: FakeSlurmOnPath) -> None:
    fake_slurm.answer(sinfo={"out": "node1 idle gpu\nnode2 mix gpu\nnode2 mix cpu*\n"})
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b", launch_command="sbatch -p gpu --nodes=1 job.sbatch"), db).close()
    res = execute_cli(db)
    assert res.exit_code == 0 and "refused host" not in res.output
    writes = fake_slurm.scheduler_writes()
    assert writes[0][:4] == ["scontrol", "update", "nodename=node2", "state=drain"]
    assert writes[1] == ["sbatch", "--parsable", "--exclude=node2", "-pgpu", "--nodes=1", "job.sbatch"]


# ---------------------------------------------------------------- an unreachable scheduler stops the relaunch

CONNECT_FAILURE = "sinfo: error: slurm_load_partitions: Unable to contact slurm controller (connect failure)\n"


def test_an_unreachable_scheduler_stops_the_relaunch_and_says_why(tmp_path: Path,
                                                                  fake_slurm: FakeSlurmOnPath) -> None:
    fake_slurm.answer(sinfo={"rc": 1, "err": CONNECT_FAILURE})
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    res = execute_cli(db)
    assert res.exit_code == 2
    assert "relaunch refused: the scheduler cannot be reached" in res.output and CONNECT_FAILURE.strip() in res.output
    assert fake_slurm.scheduler_writes() == []
    with Lab(db, read_only=True) as lab:
        rows = lab.sql("SELECT result, detail FROM relaunches")
    assert rows["result"].to_list() == ["refused"] and "Unable to contact slurm controller" in rows["detail"][0]


def test_a_repeat_says_already_relaunched_even_with_the_scheduler_down(tmp_path: Path,
                                                                       fake_slurm: FakeSlurmOnPath) -> None:
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    assert execute_cli(db).exit_code == 0
    fake_slurm.answer(sinfo={"rc": 1, "err": CONNECT_FAILURE})
    res = execute_cli(db)
    assert res.exit_code == 0 and "already relaunched (audit row 1, job 42): nothing launched" in res.output
    assert fake_slurm.launches() == 1


DEAD_CONTROLLER = """ClusterName=dead
SlurmctldHost=localhost
SlurmctldPort={port}
NodeName=node[1-4] CPUs=1 State=UNKNOWN
PartitionName=main Nodes=node[1-4] Default=YES
"""


@pytest.fixture
def sinfo() -> str:
    """The real Slurm client, installed as the local cluster's fixture installs it (decided here, when the test
    runs, not at collection: on a fresh machine Slurm is not there yet when the tests are collected)."""
    from slurm_cluster import SlurmUnavailable, ensure_installed

    try:
        ensure_installed()
    except SlurmUnavailable as e:
        pytest.skip(f"needs the Slurm client (slurm-wlm): {e}")
    path = shutil.which("sinfo")
    assert path, "slurm-wlm installed but sinfo not on PATH"
    return path


def test_the_real_sinfo_without_its_controller_stops_the_relaunch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  sinfo: str) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(DEAD_CONTROLLER.format(port=_free_ports(1)[0]))  # nothing listens there
    monkeypatch.setenv("SLURM_CONF", str(conf))
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    res = execute_cli(db)
    assert res.exit_code == 2, res.output
    assert "relaunch refused: the scheduler cannot be reached: sinfo failed (exit 1)" in res.output
    assert "Unable to contact slurm controller" in res.output


def test_a_missing_sinfo_stops_the_relaunch(tmp_path: Path, fake_slurm: FakeSlurmOnPath,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (fake_slurm.bin / "sinfo").unlink()
    monkeypatch.setenv("PATH", str(fake_slurm.bin))  # no real Slurm client behind the fake either
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    res = execute_cli(db)
    assert res.exit_code == 2 and "the scheduler cannot be reached" in res.output and "sinfo" in res.output
    assert fake_slurm.scheduler_writes() == []


def test_a_failed_sbatch_prints_the_schedulers_error_and_may_be_retried(tmp_path: Path,
                                                                       fake_slurm: FakeSlurmOnPath) -> None:
    refusal = "sbatch: error: Batch job submission failed: Invalid partition name specified"
    fake_slurm.answer(sbatch={"rc": 1, "err": refusal + "\n"})
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    res = execute_cli(db)
    assert res.exit_code == 1 and refusal in res.output
    fake_slurm.answer(sbatch={"out": "43\n"})
    res = execute_cli(db)  # nothing was accepted: the incident may be relaunched
    assert res.exit_code == 0 and "job 43: running" in res.output
    assert fake_slurm.launches() == 2


# ---------------------------------------------------------------- one incident, one launch, whatever the concurrency

def test_concurrent_executions_of_one_incident_launch_once(tmp_path: Path, fake_slurm: FakeSlurmOnPath) -> None:
    template = tmp_path / "template.duckdb"
    lab_of(write_bundle(tmp_path / "b"), template).close()
    threads = 4
    for trial in range(3):
        db = tmp_path / f"trial-{trial}.duckdb"
        shutil.copy(template, db)
        asked = threading.Barrier(threads)  # every thread has asked the scheduler: all reach the claim together

        def runner(argv: list[str], asked: threading.Barrier = asked) -> subprocess.CompletedProcess:
            res = run_argv(argv)
            if argv[0] == "sinfo":
                asked.wait(timeout=60)
            return res

        def relaunch_once(runner=runner, db=db) -> Execution:
            con = store.connect(db)
            try:
                return execute(con, relaunch_plan(con, "tiny"), runner=runner, watch_s=0)
            finally:
                con.close()

        before = fake_slurm.launches()
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(lambda _: relaunch_once(), range(threads)))
        assert fake_slurm.launches() - before == 1, f"trial {trial}"
        launched = [r for r in results if not r.repeat]
        assert len(launched) == 1 and launched[0].job_id == "42"
        rid = launched[0].relaunch_id
        standing = rf"(already relaunched|a relaunch of this incident is in progress) \(audit row {rid}\b"
        assert all(re.match(standing, r.note) for r in results if r.repeat)
        with Lab(db, read_only=True) as lab:
            rows = lab.sql("SELECT result FROM relaunches ORDER BY relaunch_id")["result"].to_list()
        assert sorted(rows) == ["repeat"] * (threads - 1) + ["running"]


def test_a_launch_recorded_before_claims_existed_still_stands(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    for version, statements in enumerate(store.MIGRATIONS[:4], start=1):  # a database of schema version 4
        for stmt in statements:
            con.execute(stmt)
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [version])
    con.execute("""INSERT INTO relaunches (incident_id, run, result, job_id) VALUES ('tiny:1:end', 'tiny', 'failed',
                   NULL), ('tiny:1:end', 'tiny', 'running', '41'), ('tiny:1:end', 'tiny', 'repeat', '41')""")
    con.close()
    con = store.connect(db)
    try:
        assert con.execute("SELECT incident_id, relaunch_id FROM relaunch_claims").fetchall() == [("tiny:1:end", 2)]
    finally:
        con.close()


# ---------------------------------------------------------------- a database another process holds

HOLD = """import duckdb, sys
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def held(db: Path, mode: str):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(db), mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "holding"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_a_database_another_process_writes_is_named_with_its_pid(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    with held(db, "rw") as pid:
        for read_only in (False, True):
            with pytest.raises(store.DatabaseLocked) as caught:
                store.connect(db, read_only=read_only)
            assert str(caught.value) == f"{db}: another clusterlab is writing to this database (pid {pid})"
            assert caught.value.pid == pid
        res = execute_cli(db)
        assert res.exit_code == 2
        assert res.output.strip() == f"error: {db}: another clusterlab is writing to this database (pid {pid})"
    with held(db, "ro") as pid, pytest.raises(store.DatabaseLocked, match=rf"is reading this database \(pid {pid}\)"):
        store.connect(db)


KILLED_MID_LAUNCH = """
import os, signal, sys
from clusterlab import store
from clusterlab.relaunch import execute, relaunch_plan
from clusterlab.relaunch.backends.base import run_argv

def runner(argv):
    if argv[0] == "sbatch":  # claimed, about to submit: killed here, as by an OOM killer or a lost terminal
        os.kill(os.getpid(), signal.SIGKILL)
    return run_argv(argv)

con = store.connect(sys.argv[1])
execute(con, relaunch_plan(con, "tiny"), runner=runner, watch_s=0)
"""


def test_a_process_killed_mid_launch_leaves_a_claim_that_is_named_and_can_be_given_back(
        tmp_path: Path, fake_slurm: FakeSlurmOnPath) -> None:
    db = tmp_path / "db.duckdb"
    lab_of(write_bundle(tmp_path / "b"), db).close()
    child = subprocess.run([sys.executable, "-c", KILLED_MID_LAUNCH, str(db)], capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == -9, child.stderr
    # the dead process's claim is neither taken over silently (the job may exist) nor reported as in progress
    res = execute_cli(db)
    assert res.exit_code == 2 and "died before it recorded its launch" in res.output
    assert "--release 1" in res.output and fake_slurm.launches() == 0
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "tiny", "--release", "1"])
    assert res.exit_code == 0 and "given back" in res.output
    res = execute_cli(db)
    assert res.exit_code == 0 and "job 42: running" in res.output and fake_slurm.launches() == 1
    with Lab(db, read_only=True) as lab:
        rows = lab.sql("SELECT relaunch_id, result FROM relaunches ORDER BY relaunch_id").rows()
    assert rows == [(1, "released"), (2, "refused"), (3, "running")]
    # a claim whose launch is recorded cannot be released
    res = CliRunner().invoke(main, ["--db", str(db), "relaunch", "--run", "tiny", "--release", "3"])
    assert res.exit_code == 2 and "claim stands" in res.output
