"""The relaunch driver: plans from real evidence, checkpoint verification, hostile input, idempotency, and
end to end on a real local Slurm with the tiny GPT under torchrun."""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from slurm_cluster import LocalSlurm, SlurmUnavailable

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.cli.relaunch import relaunch
from clusterlab.diagnose.checkpoint_files import verify
from clusterlab.relaunch import UnsafeValueError, check_host, check_path, execute, relaunch_plan
from clusterlab.relaunch.backends.base import LaunchSpec, run_argv
from clusterlab.relaunch.backends.slurm import SlurmBackend
from clusterlab.relaunch.backends.torchrun import TorchrunBackend
from clusterlab.relaunch.execute import RelaunchRefused
from conftest import ROOT

main.add_command(relaunch)
PLAN_KEYS = {"run", "nothing_to_relaunch", "exclude", "drain", "checkpoint", "nodes_needed", "nodes_available",
             "recompute_gpu_hours", "backend", "command", "executed"}
T0 = dt.datetime(2026, 11, 25, 10, 0, 0)
TRAIN = ROOT / "examples" / "train_tiny_gpt.py"


# ---------------------------------------------------------------- synthetic evidence in real formats

def titan(ts: dt.datetime, msg: str) -> str:
    return f"[titan] {ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d} - root - INFO - {msg}"


def write_bundle(root: Path, *, host: str = "node2", saves=(5, 10), steps: int = 12, kernel_host: str | None = None,
                 checkpoint_dir: Path | None = None, launch_command: str | None = None, total: int | None = None,
                 xid: bool = True) -> Path:
    """A one-attempt run `tiny` on `host` (torchtitan log, step JSONL) ended by an Xid 79 on that host.

    `total`: the run's total steps in torchtitan's start line; `xid=False`: the attempt ends with no failure.
    """
    (root / "runs" / "tiny" / "attempt-1" / "steps").mkdir(parents=True)
    (root / "inventory.toml").write_text('[providers.loopback]\nusd_per_gpu_hour = 1.0\n\n[clusters.local]\n'
                                         'provider = "loopback"\ngpus_per_node = 2\nnodes = "node[1-4]"\n')
    ckpt = f'checkpoint_dir = "{checkpoint_dir}"\n' if checkpoint_dir else ""
    cmd = launch_command or "sbatch --job-name=tiny --nodes=1 job.sbatch"
    (root / "runs" / "tiny" / "run.toml").write_text(
        f'cluster = "local"\ngpus = 2\ntokens_per_step = 1024\n{ckpt}launcher = "slurm"\nlaunch_command = "{cmd}"\n')
    # torchtitan's start line names the total when it knows it (data_samples/torchtitan/*.log)
    start = "Training starts at step 1" + (f", with local batch size 2, global batch size 4, total steps {total}"
                                           if total else "")
    log, records = [titan(T0, start)], []
    for s in range(1, steps + 1):
        ts = T0 + dt.timedelta(seconds=10 * s)
        log.append(titan(ts, f"step: {s:2d}  loss: {6 - s / 10:7.4f}  memory:  0.00GiB(0.00%)  tps: 1,000"))
        records += [json.dumps({"ts": ts.timestamp(), "rank": r, "host": host, "step": s, "step_s": 10.0,
                                "loss": 6 - s / 10}) for r in (0, 1)]
        if s in saves:
            log += [titan(ts, "Saving the checkpoint (or staging if async is enabled)."),
                    titan(ts + dt.timedelta(seconds=1), "Finished saving the checkpoint in 1.00 seconds.")]
    if xid:
        _write_xid(root, host, kernel_host, T0 + dt.timedelta(seconds=10 * steps + 2))
    else:
        log.append(titan(T0 + dt.timedelta(seconds=10 * steps + 1), "Training completed"))
    attempt = root / "runs" / "tiny" / "attempt-1"
    (attempt / "train.log").write_text("\n".join(log) + "\n")
    (attempt / "steps" / "rank-0.jsonl").write_text("\n".join(records) + "\n")
    return root


def _write_xid(root: Path, host: str, kernel_host: str | None, xid_ts: dt.datetime) -> None:
    xid = "NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python, GPU has fallen off the bus."
    if kernel_host is None:
        (root / "nodes" / host).mkdir(parents=True)
        (root / "nodes" / host / "dmesg").write_text(f"[{xid_ts:%a %b %e %H:%M:%S %Y}] {xid}\n")
    else:  # a syslog line names its own host
        (root / "logs").mkdir()
        (root / "logs" / "kern.log").write_text(f"{xid_ts:%Y-%m-%dT%H:%M:%S}+0000 {kernel_host} kernel: {xid}\n")


def save_dcp(path: Path, step: int) -> None:
    """A real torch.distributed.checkpoint checkpoint of a small state, in a subprocess (no process group)."""
    code = ("import sys, warnings, torch, torch.distributed.checkpoint as dcp; warnings.simplefilter('ignore');"
            "dcp.save({'w': torch.arange(4096.0), 'step': int(sys.argv[2])}, checkpoint_id=sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(path), str(step)], check=True, capture_output=True)


def lab_of(bundle: Path, db: Path) -> Lab:
    lab = Lab(db)
    lab.ingest(bundle)
    return lab


# ---------------------------------------------------------------- plans from the sample bundle

@pytest.fixture(scope="module")
def bundle_db(bundle_db_copy) -> str:
    return str(bundle_db_copy)


@pytest.fixture
def bundle_lab(bundle_db: str):
    with Lab(bundle_db, read_only=True) as lab:  # read-only, as the CLI's dry run opens it
        yield lab


def test_bundle_plan_excludes_the_root_cause_hosts_with_reasons(bundle_lab: Lab) -> None:
    plan = relaunch_plan(bundle_lab.con, "llama8b-pretrain")
    by_host = {e.host: e for e in plan.exclude}
    assert set(by_host) == {"east-002", "east-003"}  # east-005 straggled once: preflight, not exclusion
    assert by_host["east-003"].failure_mode == "gpu_fell_off_bus"
    assert by_host["east-003"].incident == "llama8b-pretrain:1:end"
    assert "Xid 79" in by_host["east-003"].reason and "drain node" in by_host["east-003"].reason
    assert by_host["east-002"].failure_mode == "network" and by_host["east-002"].incident == "llama8b-pretrain:2:end"
    assert by_host["east-003"].evidence[0]["file"].endswith("nodes/east-003/dmesg")
    assert plan.drain == []  # the slurmctld log shows both already drained
    assert "already drained" in by_host["east-002"].reason
    assert (plan.checkpoint.step, plan.checkpoint.verified) == (700, False)  # /lustre is not mounted here
    assert (plan.nodes_needed, plan.nodes_available) == (4, 14)
    assert plan.recompute_gpu_hours == pytest.approx(3.32, abs=0.05)  # steps 701-792 of attempt 3, 32 GPUs
    assert plan.command[:3] == ["sbatch", "--parsable", "--exclude=east-[002-003]"]
    assert "--export=ALL,CLUSTERLAB_RESUME_FROM=/lustre/ckpt/llama8b,CLUSTERLAB_RESUME_STEP=700" in plan.command
    assert plan.command[-1] == "train_llama8b.sbatch"


def test_bundle_torchrun_plan_and_cli_json_shape(bundle_lab: Lab) -> None:
    res = CliRunner().invoke(main, ["--db", bundle_lab.path, "relaunch", "--run", "mm7b-sft", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert set(doc) == PLAN_KEYS
    assert doc["backend"] == "torchrun" and doc["executed"] is False
    # its last attempt logged "Training completed" at step 600 of 600: there is nothing to relaunch
    assert doc["command"] == [] and doc["drain"] == []
    why = doc["nothing_to_relaunch"]
    assert "attempt 2 ended with no failure on record and reached step 600 of the run's 600" in why
    assert doc["nothing_to_relaunch"].endswith("runs/mm7b-sft/attempt-2/bor-001.log:70)")
    assert set(doc["checkpoint"]) == {"step", "path", "verified", "skipped"}
    assert json.loads(CliRunner().invoke(main, ["--db", bundle_lab.path, "relaunch", "--run", "llama8b-pretrain",
                                                "--json"]).output)["nothing_to_relaunch"] is None
    res = CliRunner().invoke(main, ["--db", bundle_lab.path, "relaunch", "--run", "no-such-run"])
    assert res.exit_code == 2 and "no run 'no-such-run'" in res.output


# ---------------------------------------------------------------- checkpoints

def test_newest_verified_checkpoint_and_lost_ones(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    for s in (5, 10, 15):
        save_dcp(ckpt / f"step-{s}", s)
    shard = next((ckpt / "step-15").glob("*.distcp"))
    shard.write_bytes(shard.read_bytes()[:100])  # truncated shard: 15 is corrupt
    shutil.rmtree(ckpt / "step-10")  # deleted by the provider: 10 is lost
    with lab_of(write_bundle(tmp_path / "b", saves=(5, 10, 15), steps=17, checkpoint_dir=ckpt),
                tmp_path / "db.duckdb") as lab:
        c = relaunch_plan(lab.con, "tiny").checkpoint
    assert (c.step, c.path, c.verified) == (5, str(ckpt / "step-5"), True)
    assert [(s["step"], s["failure_mode"]) for s in c.skipped] == [(15, "checkpoint_lost"), (10, "checkpoint_lost")]
    assert "bytes, metadata needs" in c.skipped[0]["reason"] and "not in" in c.skipped[1]["reason"]


def test_a_host_whose_latest_preflight_failed_is_excluded(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")

    def host(name: str, minutes: int, flagged: bool) -> str:
        return json.dumps({"preflight": "host", "ts": (T0 + dt.timedelta(minutes=minutes)).isoformat() + "+00:00",
                           "host": name, "ranks": 2, "flagged": flagged, "suspect_link": False,
                           "reason": "rank 5: matmul_tflops 310 is 61% below the fleet median 795" if flagged else ""})
    # node3 failed; node4 failed and passed a later check; node1 passed
    lines = [host("node3", 1, True), host("node4", 1, True), host("node1", 1, False), host("node4", 9, False)]
    (bundle / "preflight.jsonl").write_text("\n".join(lines) + "\n")
    with lab_of(bundle, tmp_path / "db.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
    by_host = {e.host: e for e in plan.exclude}
    assert set(by_host) == {"node2", "node3"}
    assert by_host["node3"].reason.startswith("failed preflight") and "61% below" in by_host["node3"].reason
    assert by_host["node3"].evidence[0]["file"].endswith("preflight.jsonl")
    assert {d["host"] for d in plan.drain} == {"node2", "node3"} and plan.nodes_available == 2


def test_metadata_pickle_cannot_run_code(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path}/pwned",))

    (tmp_path / "step-1").mkdir()
    (tmp_path / "step-1" / ".metadata").write_bytes(pickle.dumps(Evil()))
    check = verify(tmp_path / "step-1")
    assert not check.ok and "has no place in checkpoint metadata" in check.problem
    assert not (tmp_path / "pwned").exists()
    (tmp_path / "step-2").mkdir()
    (tmp_path / "step-2" / "__0_0.distcp").write_bytes(b"x" * 10)
    assert verify(tmp_path / "step-2").problem == "no .metadata: the save did not finish"


# ---------------------------------------------------------------- hostile input

@pytest.mark.parametrize("bad", ["node1;touch /tmp/pwned", "node1;touch${IFS}/tmp/pwned", "-x", "a b", "$(id)",
                                 "node1\n", ""])
def test_hostnames_outside_the_strict_pattern_are_refused(bad: str) -> None:
    with pytest.raises(UnsafeValueError, match="not a plain hostname"):
        check_host(bad)


@pytest.mark.parametrize("bad", ["/ckpt/x;rm -rf /", "relative/path", "/a/../etc", "/a b", "/a,b", "/$HOME"])
def test_paths_outside_the_strict_pattern_are_refused(bad: str) -> None:
    with pytest.raises(UnsafeValueError, match="not a plain absolute path"):
        check_path(bad)


def test_hostile_hostname_in_a_log_is_refused_and_reaches_no_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f"node1;touch${{IFS}}{marker}"  # a shell would run `touch <marker>`
    bundle = write_bundle(tmp_path / "b", host=evil, kernel_host=evil)
    with lab_of(bundle, tmp_path / "db.duckdb") as lab:
        assert lab.incidents("tiny")["host"][0] == evil  # the evidence keeps what the log said
        with pytest.raises(UnsafeValueError, match="refusing host .*not a plain hostname"):
            relaunch_plan(lab.con, "tiny")
    res = CliRunner().invoke(main, ["--db", str(tmp_path / "db.duckdb"), "relaunch", "--run", "tiny", "--execute"])
    assert res.exit_code == 2 and "refusing host" in res.output
    # and even as an argument, such a value is data: no shell ever sees it
    run_argv(["echo", evil])
    assert not marker.exists() and not Path("/tmp/pwned").exists()


def test_execute_checks_the_plan_again(tmp_path: Path) -> None:
    with lab_of(write_bundle(tmp_path / "b"), tmp_path / "db.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        plan.drain.append({"host": "node3;reboot", "reason": "x"})
        with pytest.raises(RelaunchRefused, match="refusing host"):
            execute(lab.con, plan, runner=FakeSlurm())
        assert lab.sql("SELECT result FROM relaunches")["result"].to_list() == ["refused"]


# ---------------------------------------------------------------- execution, idempotency, backends

class FakeSlurm:
    """Answers sbatch / squeue / scontrol like Slurm would; records every command."""

    def __init__(self, previous_state: str = "FAILED", sinfo: str = "node1 idle main*\nnode2 idle main*\n"
                                                                   "node3 idle main*\nnode4 idle main*\n") -> None:
        self.calls: list[list[str]] = []
        self.previous_state = previous_state
        self.sinfo = sinfo

    def __call__(self, argv: list[str]) -> subprocess.CompletedProcess:
        self.calls.append(argv)
        out = ""
        if argv[0] == "sbatch":
            out = "42\n"
        elif argv[0] == "squeue":
            out = "RUNNING\n" if argv[5] == "42" else f"{self.previous_state}\n"
        elif argv[0] == "sinfo":
            out = self.sinfo
        return subprocess.CompletedProcess(argv, 0, out, "")

    def launches(self) -> int:
        return sum(a[0] == "sbatch" or a[1:2] == ["requeue"] for a in self.calls)


def test_execute_drains_launches_once_and_records(tmp_path: Path) -> None:
    with lab_of(write_bundle(tmp_path / "b"), tmp_path / "db.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert [e.host for e in plan.exclude] == ["node2"] and plan.incident == "tiny:1:end"
        fake = FakeSlurm()
        first = execute(lab.con, plan, runner=fake, watch_s=0)
        assert (first.job_id, first.result, first.repeat) == ("42", "running", False)
        assert fake.calls[0][0] == "sinfo"  # the scheduler is asked which nodes are up before anything runs
        assert fake.calls[1][:4] == ["scontrol", "update", "nodename=node2", "state=drain"]
        assert fake.calls[1][4].startswith("reason=clusterlab tiny:1:end: gpu_fell_off_bus")
        assert fake.calls[2][:3] == ["sbatch", "--parsable", "--exclude=node2"]
        again = execute(lab.con, relaunch_plan(lab.con, "tiny"), runner=fake, watch_s=0)
        assert again.repeat and again.job_id == "42" and fake.launches() == 1
        rows = lab.sql("SELECT incident_id, job_id, result, command, plan_json FROM relaunches ORDER BY relaunch_id")
        assert rows["result"].to_list() == ["running", "repeat"] and rows["job_id"].to_list() == ["42", "42"]
        assert rows["command"][0].to_list() == plan.command
        assert json.loads(rows["plan_json"][0])["incident"] == "tiny:1:end"


def test_the_failed_attempts_own_steps_are_not_taken_for_the_relaunch(tmp_path: Path) -> None:
    """The failed run wrote steps 11-13 past checkpoint 10 a moment ago; only what comes after counts."""
    from clusterlab.relaunch.execute import _sizes, new_steps

    runs = tmp_path / "runs" / "tiny"
    old = runs / "attempt-1" / "steps" / "rank-0.jsonl"
    old.parent.mkdir(parents=True)

    def rec(step: int, loss: float) -> str:
        ts = (T0 + dt.timedelta(seconds=step)).isoformat() + "+00:00"
        return json.dumps({"ts": ts, "rank": 0, "host": "node1", "step": step, "step_s": 1.0, "loss": loss}) + "\n"

    old.write_text("".join(rec(s, 5.0) for s in range(1, 14)))
    before = _sizes(runs)
    assert new_steps(runs, before, "tiny", 10) is None
    with old.open("a") as f:  # a relaunch that appends to the same file
        f.write(rec(11, 4.5))
    assert new_steps(runs, before, "tiny", 10) == {"steps": 1, "first_step": 11, "last_step": 11, "loss": 4.5}
    new = runs / "attempt-2" / "steps" / "rank-0.jsonl"  # and one that writes a new attempt
    new.parent.mkdir(parents=True)
    new.write_text(rec(11, 4.4) + rec(12, 4.3))
    assert new_steps(runs, before, "tiny", 10)["last_step"] == 12


def test_execute_refuses_when_the_scheduler_has_too_few_nodes_up(tmp_path: Path) -> None:
    sinfo = "node1 idle\nnode2 drain\nnode3 down*\nnode4 idle*\nnode4 idle*\n"  # a node per partition line
    assert SlurmBackend().node_states(FakeSlurm(sinfo=sinfo)) == {"node1": True, "node2": False, "node3": False,
                                                                  "node4": False}
    with lab_of(write_bundle(tmp_path / "b"), tmp_path / "db.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.spec.healthy_hosts == ["node1", "node3", "node4"] and plan.nodes_needed == 1
        ok = FakeSlurm(sinfo=sinfo)
        assert execute(lab.con, plan, runner=ok, watch_s=0).job_id == "42"  # node1 is enough for one node
        plan = relaunch_plan(lab.con, "tiny")
        plan.incident, plan.nodes_needed = "tiny:other", 2
        fake = FakeSlurm(sinfo=sinfo)
        refusal = r"1 of the run's healthy nodes up for the 2 needed \(not up: node\[3-4\]"
        with pytest.raises(RelaunchRefused, match=refusal):
            execute(lab.con, plan, runner=fake, watch_s=0)
        assert fake.launches() == 0 and not any(c[:2] == ["scontrol", "update"] for c in fake.calls)
        assert lab.sql("SELECT result FROM relaunches WHERE incident_id = 'tiny:other'")["result"].to_list() == [
            "refused"]


def test_a_job_still_holding_its_nodes_is_requeued_not_resubmitted(tmp_path: Path) -> None:
    spec = LaunchSpec(run="tiny", launch_command=["sbatch", "job.sbatch"], exclude=["node2"], resume_path=None,
                      resume_step=None, nodes=1, previous_job="7")
    fake = FakeSlurm(previous_state="RUNNING")
    launch = SlurmBackend().launch(spec, fake)
    assert launch.job_id == "7" and fake.launches() == 1
    assert ["scontrol", "requeue", "7"] in fake.calls
    assert ["scontrol", "update", "jobid=7", "excnodelist=node2"] in fake.calls


def test_sbatch_options_are_merged_not_duplicated() -> None:
    spec = LaunchSpec(run="r", launch_command=["sbatch", "-x", "n9", "--export=ALL,A=1", "-N", "2", "--parsable",
                                               "job.sh", "--exclude", "script-arg"],
                      exclude=["n1"], resume_path="/ck/step-5", resume_step=5, nodes=2)
    argv = SlurmBackend().command(spec)
    assert argv == ["sbatch", "--parsable", "--exclude=n[1,9]",
                    "--export=ALL,A=1,CLUSTERLAB_RESUME_FROM=/ck/step-5,CLUSTERLAB_RESUME_STEP=5", "-N2", "job.sh",
                    "--exclude", "script-arg"]


def test_torchrun_rendezvous_moves_off_an_excluded_host() -> None:
    spec = LaunchSpec(run="r", launch_command=["torchrun", "--nnodes", "2", "--rdzv-endpoint", "bor-001:29500",
                                               "train.py"], exclude=["bor-001"], resume_path="/ck/step-3",
                      resume_step=3, nodes=2, healthy_hosts=["bor-003", "bor-004"])
    assert TorchrunBackend().command(spec) == [
        "env", "CLUSTERLAB_RESUME_FROM=/ck/step-3", "CLUSTERLAB_RESUME_STEP=3", "torchrun", "--nnodes", "2",
        "--rdzv-endpoint", "bor-003:29500", "train.py"]


# ---------------------------------------------------------------- end to end on a real Slurm

@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    try:
        cluster = LocalSlurm(tmp_path_factory.mktemp("slurm")).start()
    except SlurmUnavailable as e:
        pytest.skip(str(e))
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)  # sbatch / scontrol run by the relaunch driver find it
    try:
        yield cluster
    finally:
        cluster.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


JOB_SCRIPT = """#!/bin/bash
# One attempt of the tiny GPT: its logs go to the next free runs/tiny/attempt-K of the bundle.
set -eu
n=$(ls -d {run}/attempt-* 2>/dev/null | wc -l)
out={run}/attempt-$((n + 1))
mkdir -p "$out"
exec {torchrun} --standalone --nproc-per-node=2 {train} --steps 20 --save-every 5 --ckpt-dir {ckpt} \\
    --out "$out" "$@" > "$out/train.log" 2>&1
"""


def _e2e_setup(tmp_path: Path, slurm: LocalSlurm, name: str) -> tuple[Path, Path, list[str]]:
    """Bundle skeleton, job script and the run's sbatch command (the one run.toml records)."""
    bundle, ckpt = tmp_path / "bundle", tmp_path / "ckpt"
    run = bundle / "runs" / "tiny"
    run.mkdir(parents=True)
    (bundle / "inventory.toml").write_text('[providers.loopback]\nusd_per_gpu_hour = 1.0\n\n[clusters.local]\n'
                                           'provider = "loopback"\ngpus_per_node = 2\nnodes = "node[1-4]"\n')
    script = tmp_path / "job.sbatch"
    script.write_text(JOB_SCRIPT.format(run=run, torchrun=Path(sys.executable).with_name("torchrun"), train=TRAIN,
                                        ckpt=ckpt))
    script.chmod(0o755)
    cmd = ["sbatch", f"--job-name={name}", "--nodes=1", f"--output={tmp_path}/slurm-%j.out", "--open-mode=append",
           str(script)]
    (run / "run.toml").write_text(f'cluster = "local"\ngpus = 2\ntokens_per_step = 1024\ncheckpoint_dir = "{ckpt}"\n'
                                  f'launcher = "slurm"\nlaunch_command = "{" ".join(cmd)}"\n')
    return bundle, ckpt, cmd


def _finished(slurm: LocalSlurm, job: str, timeout: float = 120) -> str:
    return slurm.wait_for(lambda: (s := slurm.job_state(job)) not in ("PENDING", "RUNNING", "CONFIGURING",
                                                                     "COMPLETING", "UNKNOWN") and s, timeout, job)


def _losses(lab: Lab, attempt: int) -> dict[int, float]:
    rows = lab.sql("SELECT step, loss FROM rank_steps WHERE run = 'tiny' AND attempt = ? AND rank = 0", [attempt])
    return dict(rows.iter_rows())


def _fail_one_rank(tmp_path: Path, slurm: LocalSlurm, name: str) -> tuple[Path, Path, str]:
    """Submit the tiny GPT, let rank 1 die before step 14, and write an Xid 79 for its node; (bundle, ckpt, node)."""
    bundle, ckpt, cmd = _e2e_setup(tmp_path, slurm, name)
    job = slurm.run(*cmd[:1], "--parsable", *cmd[1:], "--fail-at-step", "14", "--fail-rank", "1").strip()
    assert _finished(slurm, job) == "FAILED"
    node = slurm.run("squeue", "-h", "-t", "all", "-j", job, "-o", "%N").strip()
    last = json.loads((bundle / "runs/tiny/attempt-1/steps/rank-1.jsonl").read_text().splitlines()[-1])
    when = dt.datetime.fromisoformat(last["ts"]).astimezone(dt.UTC) + dt.timedelta(seconds=0.5)
    (bundle / "nodes" / node).mkdir(parents=True)
    (bundle / "nodes" / node / "dmesg").write_text(
        f"[{when:%a %b %e %H:%M:%S %Y}] NVRM: Xid (PCI:0000:5d:00): 79, pid={os.getpid()}, name=python, "
        "GPU has fallen off the bus.\n")
    return bundle, ckpt, node


def _relaunch_end_to_end(tmp_path: Path, slurm: LocalSlurm, delete_newest: bool) -> dict:
    t0 = time.monotonic()
    bundle, ckpt, node = _fail_one_rank(tmp_path, slurm, f"tiny-{int(delete_newest)}")
    if delete_newest:
        shutil.rmtree(ckpt / "step-10")
    db, cli = str(tmp_path / "db.duckdb"), CliRunner()
    assert cli.invoke(main, ["--db", db, "ingest", str(bundle)]).exit_code == 0
    with Lab(db, read_only=True) as lab:
        inc = lab.incidents("tiny").filter(kind="attempt_end").row(0, named=True)
    assert (inc["host"], inc["failure_mode"], inc["action"]) == (node, "gpu_fell_off_bus", "drain node")
    args = ["--db", db, "relaunch", "--run", "tiny", "--execute", "--watch", "120", "--watch-dir",
            str(bundle / "runs" / "tiny"), "--json"]
    res = cli.invoke(main, args)
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    resume = 5 if delete_newest else 10
    assert [e["host"] for e in plan["exclude"]] == [node] and plan["drain"][0]["host"] == node
    assert (plan["checkpoint"]["step"], plan["checkpoint"]["verified"]) == (resume, True)
    lost = [(s["step"], s["failure_mode"]) for s in plan["checkpoint"]["skipped"]]
    assert lost == ([(10, "checkpoint_lost")] if delete_newest else [])
    ex = plan["executed"]
    assert ex["result"] in ("running", "completed") and ex["first_steps"]["first_step"] == resume + 1
    assert slurm.node_state(node).startswith("dr")  # drain / drng / drained
    again = json.loads(cli.invoke(main, args).output)["executed"]
    assert again["repeat"] and again["job_id"] == ex["job_id"]
    assert _finished(slurm, ex["job_id"]) == "COMPLETED"
    assert slurm.run("squeue", "-h", "-t", "all", "-o", "%i").split().count(ex["job_id"]) == 1
    new_node = slurm.run("squeue", "-h", "-t", "all", "-j", ex["job_id"], "-o", "%N").strip()
    assert new_node != node
    assert cli.invoke(main, ["--db", db, "ingest", str(bundle)]).exit_code == 0
    with Lab(db, read_only=True) as lab:
        a2 = lab.attempts("tiny").filter(attempt=2).row(0, named=True)
        before, after = _losses(lab, 1), _losses(lab, 2)
        loaded = lab.sql("SELECT step FROM checkpoints WHERE run = 'tiny' AND attempt = 2 AND action = 'load'")
    assert (a2["hosts"], a2["first_step"], a2["last_step"]) == ([new_node], resume + 1, 20)
    assert loaded["step"].to_list() == [resume]
    # the resumed run sees the same batches from the same state: its curve is the failed run's curve
    for s in range(resume + 1, 14):
        assert after[s] == pytest.approx(before[s], abs=1e-4)
    assert after[resume + 1] < before[1] - 1.0  # it continued from the checkpoint, not from scratch
    slurm.run("scontrol", "update", f"nodename={node}", "state=resume")
    figures = {"drained": node, "relaunched_on": new_node, "resumed_step": resume + 1,
               "loss_before": before[resume + 1], "loss_after": after[resume + 1], "loss_step1": before[1],
               "seconds": round(time.monotonic() - t0, 1)}
    print(f"\ne2e figures: {figures}")
    return figures


@pytest.mark.slow
def test_end_to_end_drain_resubmit_and_resume(tmp_path: Path, slurm: LocalSlurm) -> None:
    _relaunch_end_to_end(tmp_path, slurm, delete_newest=False)


@pytest.mark.slow
def test_end_to_end_newest_checkpoint_deleted(tmp_path: Path, slurm: LocalSlurm) -> None:
    _relaunch_end_to_end(tmp_path, slurm, delete_newest=True)


# ---------------------------------------------------------------- the example script and the torchrun backend

def _torchrun(*args: str, log: Path, timeout: float = 120) -> int:
    cmd = [str(Path(sys.executable).with_name("torchrun")), *args]
    with open(log, "wb") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode


def _rank0(attempt: Path) -> list[dict]:
    return [json.loads(ln) for ln in (attempt / "steps" / "rank-0.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_train_script_survives_torchrun_restarts(tmp_path: Path) -> None:
    """--max-restarts with gloo: the restarted workers find a fresh store prefix, resume and finish."""
    rc = _torchrun("--standalone", "--max-restarts=1", "--nproc-per-node=2", str(TRAIN), "--steps", "12",
                   "--save-every", "5", "--ckpt-dir", str(tmp_path / "ckpt"), "--out", str(tmp_path / "a"),
                   "--fail-at-step", "12", log=tmp_path / "log")
    assert rc == 0, (tmp_path / "log").read_text()[-3000:]
    rows = _rank0(tmp_path / "a")
    assert [r["step"] for r in rows] == [*range(1, 12), *range(11, 13)]  # 11 again after the restart
    assert rows[10]["loss"] == pytest.approx(rows[11]["loss"], abs=1e-4)


@pytest.mark.slow
def test_torchrun_backend_relaunches_locally_from_the_checkpoint(tmp_path: Path) -> None:
    bundle, ckpt = tmp_path / "bundle", tmp_path / "ckpt"
    runs = bundle / "runs" / "tiny"
    runs.mkdir(parents=True)
    args = ["--standalone", "--nproc-per-node=2", str(TRAIN), "--steps", "13", "--save-every", "5",
            "--ckpt-dir", str(ckpt), "--runs-dir", str(runs)]
    cmd = " ".join([str(Path(sys.executable).with_name("torchrun")), *args])
    (runs / "run.toml").write_text(f'gpus = 2\ncheckpoint_dir = "{ckpt}"\nlauncher = "torchrun"\n'
                                   f'launch_command = "{cmd}"\n')
    assert _torchrun(*args, "--fail-at-step", "12", log=tmp_path / "first.log") != 0
    shutil.move(tmp_path / "first.log", runs / "attempt-1" / "train.log")
    with lab_of(bundle, tmp_path / "db.duckdb") as lab:
        plan = relaunch_plan(lab.con, "tiny")
        assert plan.backend == "torchrun" and plan.exclude == [] and plan.checkpoint.step == 10
        assert plan.command[:3] == ["env", f"CLUSTERLAB_RESUME_FROM={ckpt}/step-10", "CLUSTERLAB_RESUME_STEP=10"]
        backend = TorchrunBackend(log_dir=tmp_path)
        ex = execute(lab.con, plan, backend=backend, watch_s=90, watch_dir=runs)
        assert ex.result in ("running", "completed") and ex.first_steps["first_step"] == 11
        LocalSlurm.wait_for(lambda: backend.state(ex.job_id, run_argv) != "RUNNING", 90, "torchrun")
        assert backend.state(ex.job_id, run_argv) == "COMPLETED"
    first, second = _rank0(runs / "attempt-1"), _rank0(runs / "attempt-2")
    assert [r["step"] for r in second] == [11, 12, 13]
    assert second[0]["loss"] == pytest.approx(first[10]["loss"], abs=1e-4)
