"""Slurm collectors: job output (srun / slurmstepd), slurmctld log, sacct dumps, jobcomp records."""

from __future__ import annotations

import datetime as dt
import json
import time

import polars as pl
import pytest

from clusterlab.collectors import sacct, slurm, slurm_jobcomp, slurmctld
from clusterlab.collectors._base import Context

BERLIN = Context(path="job.out", tz="Europe/Berlin")
UTC = Context(path="job.out")


def frame(*texts: str, start: int = 1) -> pl.DataFrame:
    """A batch as the engine hands it over: numbered lines."""
    return pl.DataFrame({"line": list(range(start, start + len(texts))), "text": list(texts)},
                        schema={"line": pl.Int64, "text": pl.String})


def matched(mod, *texts: str) -> pl.DataFrame:
    """Only the lines the collector's PATTERN selects (what the engine would pass)."""
    f = frame(*texts)
    return f if mod.PATTERN is None else f.filter(pl.col("text").str.contains(mod.PATTERN))


def events(mod, *texts: str, ctx: Context = UTC) -> list[dict]:
    parsed = mod.parse(matched(mod, *texts), ctx)
    rows = parsed.tables["events"].to_dicts() if "events" in parsed.tables else []
    for r in rows:
        r["detail"] = json.loads(r["detail"]) if r["detail"] else {}
    return rows


def jobs(mod, *texts: str, ctx: Context = UTC, start: int = 1) -> tuple[list[dict], int]:
    parsed = mod.parse(frame(*texts, start=start), ctx)
    return (parsed.tables["jobs"].to_dicts() if "jobs" in parsed.tables else []), parsed.unparsed


# --- job output: slurmstepd banners and srun errors ------------------------------------------

NODE_FAIL = ("slurmstepd-node1: error: *** JOB 25 ON node1 CANCELLED AT 2026-12-03T08:45:21 DUE TO NODE FAILURE, "
             "SEE SLURMCTLD LOG FOR DETAILS ***")


def test_node_failure_cancel_line_names_host() -> None:
    (ev,) = events(slurm, NODE_FAIL)
    assert (ev["kind"], ev["failure_mode"], ev["host"]) == ("slurm_node_fail", "node_failure", "node1")
    assert ev["detail"] == {"job_id": "25", "job_step": "batch", "reason": "node failure"}


def test_cancel_time_is_cluster_local_time() -> None:
    (ev,) = events(slurm, NODE_FAIL, ctx=BERLIN)
    assert ev["ts"] == dt.datetime(2026, 12, 3, 7, 45, 21)  # 08:45:21 CET


@pytest.mark.parametrize(("why", "kind", "mode"), [
    ("TIME LIMIT", "slurm_time_limit", "time_limit"),
    ("PREEMPTION", "slurm_preempted", "preemption"),
    ("JOB REQUEUE", "slurm_requeued", None),
])
def test_cancel_reason_decides_kind(why: str, kind: str, mode: str | None) -> None:
    line = f"slurmstepd: error: *** STEP 19.0 ON node3 CANCELLED AT 2026-12-03T08:44:56 DUE TO {why} ***"
    (ev,) = events(slurm, line)
    assert (ev["kind"], ev["failure_mode"], ev["detail"]["job_step"]) == (kind, mode, "0")


def test_a_persons_job_cancel_and_a_bare_step_cancel_raise_no_failure() -> None:
    # NOTE: a person's scancel is no failure of the job's (root cause still reads slurm_cancelled as the user's
    # stop); srun --kill-on-bad-exit cancels a step after a task failed: that is not a person.
    job, step = events(slurm, "slurmstepd: error: *** JOB 18 ON node3 CANCELLED AT 2026-12-03T08:43:53 ***",
                       "slurmstepd-node1: error: *** STEP 12.0 ON node1 CANCELLED AT 2026-12-03T08:41:03 ***")
    assert (job["kind"], job["failure_mode"]) == ("slurm_cancelled", None)
    assert (step["kind"], step["failure_mode"]) == ("slurm_step_cancelled", None)


def test_task_exit_gives_exit_code_rank_and_host() -> None:
    (ev,) = events(slurm, "srun: error: node2: task 3: Exited with exit code 1")
    assert (ev["kind"], ev["host"], ev["rank"], ev["detail"]["exit_code"]) == ("slurm_task_exit", "node2", 3, 1)


def test_a_non_zero_task_exit_is_the_applications_failure_and_zero_none() -> None:
    bad, ok = events(slurm, "srun: error: node2: tasks 0-3: Exited with exit code 2",
                     "srun: error: node2: task 4: Exited with exit code 0")
    assert (bad["failure_mode"], ok["failure_mode"], ok["severity"]) == ("user_code_error", None, "info")


def test_a_launch_that_cannot_exec_is_the_job_scripts_error() -> None:
    (ev,) = events(slurm, "slurmstepd: error: execve(): torchrun: No such file or directory")
    assert (ev["kind"], ev["failure_mode"]) == ("slurm_exec_failed", "user_code_error")
    assert ev["detail"] == {"command": "torchrun", "error": "No such file or directory"}


def test_nodes_that_never_booted_and_a_failed_prolog_are_node_failures() -> None:
    rows = events(slurm, "srun: error: Nodes cloud-[3-4] are still not ready",
                  "srun: error: Something is wrong with the boot of the nodes.",
                  "salloc: Prolog failure on node gpu-102")
    assert [(r["host"], r["failure_mode"]) for r in rows] == [
        ("cloud-3", "node_failure"), ("cloud-4", "node_failure"), (None, "node_failure"), ("gpu-102", "node_failure")]


def test_task_signal_name_becomes_its_number() -> None:
    killed, term, segv = events(slurm, "srun: error: node2: task 1: Killed",
                                "srun: error: node1: tasks 0-1: Terminated",
                                "srun: error: gpu-021: task 33: Segmentation fault (core dumped)")
    assert (killed["detail"]["signal"], killed["severity"]) == (9, "error")
    # srun's SIGTERM to the surviving tasks is a consequence, and a range names no single rank.
    assert (term["detail"]["signal"], term["severity"], term["rank"]) == (15, "warning", None)
    assert term["detail"]["tasks"] == "0-1"
    assert (segv["detail"]["signal"], segv["detail"]["core_dumped"]) == (11, True)


def test_task_hostlist_gives_one_event_per_node() -> None:
    rows = events(slurm, "srun: error: gpu-[019-020]: tasks 16-31: Segmentation fault",
                  "srun: error: Node failure on node[2,4]")
    assert [(r["line"], r["host"]) for r in rows] == [(1, "gpu-019"), (1, "gpu-020"), (2, "node2"), (2, "node4")]
    assert rows[3]["detail"]["nodelist"] == "node[2,4]"


def test_truncated_task_line_is_kept_as_unrecognised() -> None:
    (ev,) = events(slurm, "srun: error: node3: task 0: Termin")
    assert (ev["kind"], ev["failure_mode"], ev["severity"], ev["host"]) == (
        "unrecognised", "unknown", "warning", "node3")


def test_salloc_node_failure_names_every_node() -> None:
    rows = events(slurm, "salloc: Granted job allocation 4261", "salloc: error: Node failure on gpu-[017-018]")
    assert [(r["kind"], r["failure_mode"], r["host"]) for r in rows] == [
        ("slurm_node_fail", "node_failure", "gpu-017"), ("slurm_node_fail", "node_failure", "gpu-018")]


@pytest.mark.parametrize(("banner", "kind", "mode", "reason"), [
    # 25.05+ names the signal of a scancel, with a lower-case "to"
    ("*** JOB 18 ON node3 CANCELLED AT 2026-12-03T08:43:53 DUE to SIGNAL Terminated ***", "slurm_cancelled",
     None, "signal terminated"),
    ("*** STEP 18.0 ON node3 CANCELLED AT 2026-12-03T08:43:53 DUE to SIGNAL Killed ***", "slurm_step_cancelled",
     None, "signal killed"),
    # 25.05+ srun --kill-on-bad-exit: a task of the step failed, the application's failure
    ("*** STEP 18.0 ON node3 CANCELLED AT 2026-12-03T08:43:53 DUE TO TASK FAILURE ***", "slurm_task_failure_cancel",
     "user_code_error", "task failure"),
])
def test_slurm_25_05_cancel_banners(banner: str, kind: str, mode: str | None, reason: str) -> None:
    (ev,) = events(slurm, f"slurmstepd: error: {banner}")
    assert (ev["kind"], ev["failure_mode"], ev["detail"]["reason"]) == (kind, mode, reason)


@pytest.mark.parametrize("text", [
    "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of the step tasks have been OOM Killed.",
    "slurmstepd: error: Detected 3 oom-kill event(s) in StepId=1234.0. Some of your processes may have been killed "
    "by the cgroup out-of-memory handler.",
    "srun: error: node-3: task 5: Out Of Memory",
    "slurmstepd-node-3: error: StepId=1234.0 exceeded memory limit (52428800 > 41943040), being killed",
])
def test_oom_in_every_wording_is_host_oom(text: str) -> None:
    (ev,) = events(slurm, text)
    assert (ev["kind"], ev["failure_mode"]) == ("slurm_oom", "host_oom")


def test_stepd_program_name_gives_host_when_the_line_names_none() -> None:
    (ev,) = events(slurm, "slurmstepd-node-3: error: StepId=1234.0 exceeded memory limit (5 > 4), being killed")
    assert ev["host"] == "node-3"
    assert ev["detail"] == {"job_id": "1234", "job_step": "0", "memory_used": 5, "memory_limit": 4}


def test_slurmd_log_prefix_time_wins_over_banner_seconds() -> None:
    (ev,) = events(slurm, "[2026-12-03T08:39:53.869] [4.batch] error: *** JOB 4 ON node3 CANCELLED AT "
                          "2026-12-03T08:39:53 DUE TO TIME LIMIT ***", ctx=BERLIN)
    assert ev["ts"] == dt.datetime(2026, 12, 3, 7, 39, 53, 869000)


def test_srun_queue_lines_give_the_job_id_as_a_fact() -> None:
    parsed = slurm.parse(frame("srun: job 14 queued and waiting for resources",
                               "srun: job 14 has been allocated resources"), UTC)
    assert parsed.tables["facts"].select("key", "value").rows() == [("slurm_job_id", "14")] * 2


def test_other_srun_errors_are_kept_with_their_message() -> None:
    (ev,) = events(slurm, "srun: error: Timed out waiting for job step to complete")
    assert (ev["kind"], ev["detail"]["message"]) == ("slurm_srun_error", "Timed out waiting for job step to complete")


# Lines the engine's union filter sees on every training log: none may reach the Slurm collectors.
NOISE = [
    "gpu-017:2211:2290 [3] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
    "gpu-017:2211:2290 [3] NCCL INFO comm 0x55d0 rank 3 nRanks 64 nNodes 8 localRanks 8 localRank 3 MNNVL 0",
    "gpu-017:2211:2290 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<52124> with error 12",
    " [2026-11-25 10:00:01] iteration      100/  500000 | consumed samples: 51200 | elapsed time per iteration (ms):"
    " 412.3 | learning rate: 3.000E-04 | lm loss: 7.231E+00 | loss scale: 1.0 | grad norm: 1.234 |",
    "step 120 | loss 3.4121 | lr 3.00e-04 | tokens/s 812345 | mfu 41.2%",
    "{'loss': 2.3456, 'grad_norm': 0.91, 'learning_rate': 2e-05, 'epoch': 0.12}",
    "[ 1234.567890] NVRM: Xid (PCI:0000:5d:00): 79, pid=2211, name=python, GPU has fallen off the bus.",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: train.py FAILED",
]


@pytest.mark.parametrize("mod", [slurm, slurmctld, slurm_jobcomp], ids=lambda m: m.NAME)
def test_pattern_ignores_nccl_training_and_kernel_lines(mod) -> None:
    assert not matched(mod, *NOISE).height


def test_job_output_sniffed_by_its_srun_lines_only() -> None:
    assert slurm.sniff(b"epoch 1\nsrun: error: node2: task 3: Exited with exit code 1\n", "job.out")
    assert not slurm.sniff("\n".join(NOISE).encode(), "train.log")


def test_parse_is_vectorised_over_a_large_batch() -> None:
    lines = [f"srun: error: node{i % 64}: task {i}: Exited with exit code 1" for i in range(100_000)]
    began = time.perf_counter()
    parsed = slurm.parse(frame(*lines), UTC)
    assert parsed.tables["events"].height == 100_000
    assert time.perf_counter() - began < 10


# --- slurmctld log ----------------------------------------------------------------------------

def test_nodes_not_responding_setting_down_gives_one_event_per_node() -> None:
    rows = events(slurmctld, "[2026-12-03T08:39:54.871] error: Nodes node[2,4] not responding, setting DOWN",
                  ctx=BERLIN)
    assert [(r["host"], r["kind"], r["failure_mode"]) for r in rows] == [
        ("node2", "slurm_node_down", "node_failure"), ("node4", "slurm_node_down", "node_failure")]
    assert rows[0]["ts"] == dt.datetime(2026, 12, 3, 7, 39, 54, 871000)


def test_drain_takes_the_reason_set_just_before_and_its_xid() -> None:
    reason, drain = events(slurmctld, "[2026-12-03T08:45:51.328] update_node: node node3 reason set to: xid79 GPU "
                                      "fell off the bus",
                           "[2026-12-03T08:45:51.329] update_node: node node3 state set to DRAINED")
    assert (drain["kind"], drain["host"], drain["xid"], drain["failure_mode"]) == (
        "slurm_node_drain", "node3", 79, "gpu_fell_off_bus")
    assert drain["detail"] == {"state": "DRAINED", "reason": "xid79 GPU fell off the bus"}
    assert reason["kind"] == "slurm_node_reason"


def test_resume_after_drain_is_not_blamed() -> None:
    rows = events(slurmctld, "[t] update_node: node node3 reason set to: xid79",
                  "[t] update_node: node node3 state set to IDLE", "[t] node node3 returned to service")
    assert [(r["kind"], r["failure_mode"]) for r in rows[1:]] == [("slurm_node_resume", None)] * 2


def test_failed_node_kill_and_requeue_name_job_and_node() -> None:
    kill, requeue = events(slurmctld, "[2026-12-03T08:45:21.387] Killing JobId=25 on failed node node2",
                           "[2026-12-03T08:45:21.388] requeue job JobId=26 due to failure of node node4")
    assert (kill["kind"], kill["host"], kill["detail"]["job_id"]) == ("slurm_job_node_fail", "node2", "25")
    assert (requeue["kind"], requeue["host"], requeue["failure_mode"]) == ("slurm_job_requeue", "node4", "node_failure")


def test_job_complete_exit_status_and_signal() -> None:
    ok, code, sig, done = events(slurmctld, "[t] _job_complete: JobId=1 WEXITSTATUS 0",
                                 "[t] _job_complete: JobId=10 WEXITSTATUS 3",
                                 "[t] _job_complete: JobId=11 WTERMSIG 9", "[t] _job_complete: JobId=11 done")
    assert (ok["severity"], code["detail"]["exit_code"], sig["detail"]["signal"]) == ("info", 3, 9)
    assert done["kind"] == "slurm_job_end"


def test_time_limit_preemption_and_cancel_request() -> None:
    tl, pre, kill = events(slurmctld, "[t] Time limit exhausted for JobId=19",
                           "[t] preempted JobId=27 has been requeued to reclaim resources for JobId=28",
                           "[t] _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=81240_[4-9] uid 1000")
    assert (tl["failure_mode"], pre["failure_mode"], kill["failure_mode"]) == ("time_limit", "preemption",
                                                                              "manual_stop")
    assert pre["detail"] == {"job_id": "27", "preempt_action": "requeued", "preempted_by": "28"}
    assert kill["detail"] == {"job_id": "81240_[4-9]", "uid": 1000}


def test_allocation_keeps_the_nodelist_expression_and_array_ids() -> None:
    (ev,) = events(slurmctld, "[t] sched: Allocate JobId=81240_3(81243) NodeList=gpu-[001-002] #CPUs=224 "
                              "Partition=gpu")
    assert ev["host"] is None
    assert ev["detail"] == {"job_id": "81240_3", "raw_job_id": "81243", "nodelist": "gpu-[001-002]", "cpus": 224,
                            "partition": "gpu"}


def test_offsets_journal_and_short_time_formats() -> None:
    ny = Context(path="slurmctld.log", tz="America/New_York", year=2026)
    rows = events(slurmctld, "[2026-11-25T10:15:03.123-05:00] error: Nodes gpu-021 not responding",
                  "Nov 25 10:31:12 ctl1 slurmctld[2211]: Node gpu-021 now responding",
                  "[Nov 25 10:20:00.500] node gpu-021 returned to service",
                  "2026-11-25T10:41:09+01:00 ctl1 slurmctld[2211]: Node gpu-021 now responding", ctx=ny)
    assert [r["ts"] for r in rows] == [dt.datetime(2026, 11, 25, 15, 15, 3, 123000),
                                       dt.datetime(2026, 11, 25, 15, 31, 12),
                                       dt.datetime(2026, 11, 25, 15, 20, 0, 500000),
                                       dt.datetime(2026, 11, 25, 9, 41, 9)]


def test_start_line_gives_version_and_cluster_facts() -> None:
    parsed = slurmctld.parse(frame("[2026-12-03T08:38:23.649] slurmctld version 22.05.8 started on cluster local"),
                             UTC)
    assert sorted(parsed.tables["facts"].select("key", "value").rows()) == [
        ("slurm_cluster", "local"), ("slurm_version", "22.05.8")]


def test_slurmctld_line_without_a_known_message_is_kept_as_unrecognised() -> None:
    (ev,) = events(slurmctld, "[t] _job_complete: JobId=2 WEXITST")
    assert (ev["kind"], ev["failure_mode"], ev["severity"]) == ("unrecognised", "unknown", "warning")


def test_not_responding_is_a_node_failure_only_if_the_node_does_not_answer_again() -> None:
    rows = events(slurmctld, "[2026-11-24T08:10:00.675] error: Nodes gpu-[017-018] not responding",
                  "[2026-11-24T08:10:31.002] Node gpu-017 now responding")
    got = [(r["host"], r["kind"], r["failure_mode"], r["detail"].get("recovered")) for r in rows]
    assert got == [("gpu-017", "slurm_node_not_responding", None, True),
                   ("gpu-018", "slurm_node_not_responding", "node_failure", None),
                   ("gpu-017", "slurm_node_responding", None, None)]


@pytest.mark.parametrize("line", [
    "[2026-11-24T08:10:01.456] node gpu-017 not resumed by ResumeTimeout(600) - marking down and power_save",
    "[2026-11-24T08:10:01.456] node gpu-017 not resumed by ResumeTimeout(600), setting DOWN and POWERED_DOWN",
])
def test_resume_timeout_in_both_wordings_is_a_node_failure(line: str) -> None:
    (ev,) = events(slurmctld, line)
    assert (ev["kind"], ev["failure_mode"], ev["host"], ev["detail"]) == (
        "slurm_node_resume_timeout", "node_failure", "gpu-017", {"resume_timeout_s": 600})


def test_kill_task_failed_drain_is_a_node_failure_with_its_job() -> None:
    reason, drain = events(slurmctld,
                           "[t] update_node: node gpu-018 reason set to: Kill task failed (JobId=42 StepId=0)",
                           "[t] update_node: node gpu-018 state set to DRAINING")
    assert (reason["failure_mode"], reason["detail"]["job_id"], reason["detail"]["job_step"]) == (
        "node_failure", "42", "0")
    assert (drain["failure_mode"], drain["detail"]["reason"]) == (
        "node_failure", "Kill task failed (JobId=42 StepId=0)")


def test_preempted_job_whose_requeue_failed_is_still_preempted() -> None:
    (ev,) = events(slurmctld, "[t] error: preempted JobId=7 could not be requeued: Requested operation is presently "
                              "disabled")
    assert (ev["kind"], ev["failure_mode"], ev["detail"]["job_id"]) == ("slurm_preempted", "preemption", "7")


def test_slurmctld_sniffed_by_its_start_line() -> None:
    assert slurmctld.sniff(b"[2026-12-03T08:38:23.649] slurmctld version 22.05.8 started on cluster local\n", "x")


# --- sacct dumps ------------------------------------------------------------------------------

HEADER = "JobID|JobName|State|ExitCode|Start|End|Elapsed|NNodes|NodeList|AllocTRES|Reason"


def test_sacct_exit_code_and_signal_split() -> None:
    (job, step), _ = jobs(sacct, HEADER,
                          "10|fail3|FAILED|3:0|2026-12-03T08:41:01|2026-12-03T08:41:02|00:00:01|1|node1|cpu=1|None",
                          "17.0|bash|CANCELLED|0:9|2026-12-03T08:43:48|2026-12-03T08:44:10|00:00:22|2|node[1-2]|cpu=4|")
    assert (job["exit_code"], job["signal"], step["exit_code"], step["signal"]) == (3, 0, 0, 9)
    assert step["job_id"] == "17.0"


def test_sacct_reads_columns_by_header_whatever_their_order() -> None:
    (row,), _ = jobs(sacct, "NodeList|State|JobIDRaw|End", "node[3-4]|TIMEOUT|19|2026-12-03T08:44:56")
    assert (row["job_id"], row["state"], row["nodelist"], row["end_ts"]) == (
        "19", "TIMEOUT", "node[3-4]", dt.datetime(2026, 12, 3, 8, 44, 56))


def test_sacct_parsable_trailing_pipe() -> None:
    (row,), bad = jobs(sacct, "JobID|JobName|State|ExitCode|", "25|nodefail|NODE_FAIL|0:0|")
    assert (row["job_id"], row["state"], bad) == ("25", "NODE_FAIL", 0)


def test_sacct_local_times_unknown_and_cancelled_by_uid() -> None:
    (row,), _ = jobs(sacct, HEADER, "27|lowprio|CANCELLED by 0|0:0|None|2026-12-03T08:45:52|00:00:00|4|None assigned||"
                                    "BeginTime", ctx=BERLIN)
    assert (row["state"], row["start_ts"], row["nodelist"]) == ("CANCELLED", None, None)
    assert row["end_ts"] == row["ts"] == dt.datetime(2026, 12, 3, 7, 45, 52)


def test_sacct_running_job_has_no_end() -> None:
    (row,), _ = jobs(sacct, HEADER, "19|timeout|RUNNING|0:0|2026-12-03T08:43:48|Unknown|00:00:32|1|node3|cpu=1|None")
    assert row["end_ts"] is None and row["ts"] == row["start_ts"]


def test_sacct_gpu_count_from_alloc_tres() -> None:
    (row,), _ = jobs(sacct, "JobID|NNodes|AllocTRES", "28|4|billing=16,cpu=16,gres/gpu:h100=32,gres/gpu=32,node=4")
    assert (row["ngpus"], row["nnodes"]) == (32, 4)


def test_sacct_row_with_wrong_field_count_is_unparsed() -> None:
    rows, bad = jobs(sacct, "JobID|JobName|State", "81261|a|b test|FAILED", "81262|ok|COMPLETED")
    assert [r["job_id"] for r in rows] == ["81262"] and bad == 1


def test_sacct_header_carries_over_to_the_next_batch_of_the_same_file() -> None:
    ctx = Context(path="big.psv")
    sacct.parse(frame("JobID|State", "1|COMPLETED"), ctx)
    rows, bad = jobs(sacct, "2|FAILED", ctx=ctx, start=3)
    assert [(r["job_id"], r["state"]) for r in rows] == [("2", "FAILED")] and bad == 0


def test_sacct_rows_without_any_header_are_unparsed() -> None:
    rows, bad = jobs(sacct, "2|FAILED", ctx=Context(path="headless.psv"))
    assert rows == [] and bad == 1


def test_sacct_sniff_wants_a_header_naming_the_job_id() -> None:
    assert sacct.sniff(f"{HEADER}\n1|x|COMPLETED|0:0|||||||\n".encode(), "dump.txt")
    assert sacct.sniff(b"JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|\n", "dump.txt")
    assert not sacct.sniff(b"train|COMPLETED\n", "dump.txt")
    assert not sacct.sniff(b"srun: error: node2: task 3: Exited with exit code 1\n", "job.out")


FIXED = ["JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
         "------------ ---------- ---------- ---------- ---------- ---------- -------- "]


def test_sacct_fixed_width_columns_from_the_dash_rule() -> None:
    rows, bad = jobs(sacct, *FIXED, "4287           pretrain        gpu         ml        224    TIMEOUT      0:0 ",
                     "4287.batch        batch                    ml        112  CANCELLED     0:15 ")
    assert [(r["line"], r["job_id"], r["job_name"], r["state"], r["signal"]) for r in rows] == [
        (3, "4287", "pretrain", "TIMEOUT", 0), (4, "4287.batch", "batch", "CANCELLED", 15)] and bad == 0


def test_sacct_fixed_width_reads_truncated_states_back() -> None:
    rows, _ = jobs(sacct, "JobID                State                ExitCode ",
                   "-------------------- -------------------- -------- ",
                   "1                    CANCELLED+                0:0 ",
                   "2                    OUT_OF_ME+              0:125 ",
                   "3                    C+                        0:0 ")
    # NOTE: `C+` could be CANCELLED or COMPLETED: it stays as printed.
    assert [r["state"] for r in rows] == ["CANCELLED", "OUT_OF_MEMORY", "C"]


def test_sacct_fixed_width_row_off_the_columns_is_unparsed() -> None:
    rows, bad = jobs(sacct, *FIXED, "sacct: error: slurmdbd: Getting response to message type: DBD_GET_JOBS_COND",
                     "4287           pretrain        gpu         ml        224    TIMEOUT      0:0 ")
    assert [r["job_id"] for r in rows] == ["4287"] and bad == 1


def _fixed_row(*values: str) -> str:
    """A row under FIXED as sacct pads it: the job id left-justified, the rest right-justified."""
    widths = [12, 10, 10, 10, 10, 10, 8]
    cells = [v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))]
    return " ".join(cells) + " "


def test_sacct_fixed_width_layout_carries_over_to_the_next_batch() -> None:
    ctx = Context(path="big.txt", header=FIXED[0])
    sacct.parse(frame(*FIXED, _fixed_row("1", "a", "gpu", "ml", "1", "COMPLETED", "0:0")), ctx)
    rows, bad = jobs(sacct, _fixed_row("2", "b", "gpu", "ml", "1", "NODE_FAIL", "0:0"), ctx=ctx, start=4)
    assert [(r["job_id"], r["state"]) for r in rows] == [("2", "NODE_FAIL")] and bad == 0


def test_sacct_sniffs_fixed_width_and_json_but_not_squeue_json() -> None:
    assert sacct.sniff("\n".join([*FIXED, "1 a gpu ml 1 COMPLETED 0:0"]).encode(), "sacct.txt")
    assert not sacct.sniff(b"JobID JobName\nnot a rule\n", "x.txt")
    assert sacct.sniff(b'{\n  "jobs": [\n    {\n      "job_id": 1,\n', "sacct.json")
    assert not sacct.sniff(b'{"jobs": [{"job_id": 1, "job_state": ["RUNNING"]}]}', "squeue.json")


def _json_job(jid: int, state: str, end: int) -> list[str]:
    return ["    {", f'      "job_id": {jid},', '      "name": "train",',
            f'      "state": {{"current": ["{state}"], "reason": "None"}},',
            '      "exit_code": {"status": ["SIGNALED"], "return_code": {"set": true, "infinite": false, "number": 0},',
            '                    "signal": {"id": {"set": true, "infinite": false, "number": 9}, "name": "KILL"}},',
            f'      "time": {{"start": 1795500000, "end": {end}}},',
            '      "array": {"job_id": 40, "task_id": {"set": true, "infinite": false, "number": 3}},',
            '      "steps": [{"step": {"id": "40_3.batch", "name": "batch"}, "state": ["CANCELLED"]}]',
            "    }"]


def test_sacct_json_job_cut_by_a_batch_end_is_read_whole_from_the_next() -> None:
    ctx = Context(path="sacct.json", header="{")
    text = ["{", '  "meta": {"plugin": {"type": "openapi/slurmdbd"}},', '  "jobs": [',
            *_json_job(41, "TIMEOUT", 1795507201), "    ,", *_json_job(42, "NODE_FAIL", 1795507202), "  ],",
            '  "errors": []', "}"]
    cut = 8  # inside the first job
    first, _ = jobs(sacct, *text[:cut], ctx=ctx)
    rest, bad = jobs(sacct, *text[cut:], ctx=ctx, start=cut + 1)
    assert first == [] and bad == 0
    got = [(r["line"], r["job_id"], r["state"], r["exit_code"], r["signal"], r["end_ts"]) for r in rest]
    assert got == [(4, "40_3", "TIMEOUT", 0, 9, dt.datetime(2026, 11, 24, 8, 0, 1)),
                   (4, "40_3.batch", "CANCELLED", None, None, None),
                   (15, "40_3", "NODE_FAIL", 0, 9, dt.datetime(2026, 11, 24, 8, 0, 2)),
                   (15, "40_3.batch", "CANCELLED", None, None, None)]


def test_sacct_json_of_slurm_21_08_plain_numbers_and_strings() -> None:
    doc = ('{"jobs": [{"job_id": 7, "state": {"current": "PREEMPTED", "reason": "None"}, "allocation_nodes": 2, '
           '"exit_code": {"status": "SIGNALED", "signal": {"signal_id": 15, "name": "Terminated"}}, '
           '"time": {"start": 1795500000, "end": 1795502400}, "nodes": "gpu-[017-018]", '
           '"tres": {"allocated": [{"type": "cpu", "name": null, "id": 1, "count": 224}, '
           '{"type": "gres", "name": "gpu", "id": 1001, "count": 16}]}, '
           '"steps": [{"step": {"job_id": 7, "id": "batch", "name": "batch"}, "state": "CANCELLED"}]}]}')
    rows, bad = jobs(sacct, doc, ctx=Context(path="old.json", header=doc))
    assert [(r["job_id"], r["state"], r["signal"], r["nnodes"], r["ngpus"], r["nodelist"]) for r in rows] == [
        ("7", "PREEMPTED", 15, 2, 16, "gpu-[017-018]"), ("7.batch", "CANCELLED", None, None, None, None)]
    assert bad == 0


def test_sacct_json_garbage_in_the_jobs_array_is_reported() -> None:
    parsed = sacct.parse(frame('{"jobs": [ 12, oops ]}'), Context(path="bad.json", header="{"))
    assert parsed.unparsed == 2 and parsed.warnings[0].startswith("line 1: ") and "jobs" not in parsed.tables


def test_sacct_json_out_of_range_numbers_cost_only_their_field() -> None:
    doc = ('{"jobs": [{"job_id": 99999999999999999999, "state": {"current": "TIMEOUT"}, "allocation_nodes": 3000000000,'
           ' "time": {"start": 1e400, "end": 99999999999999, "submission": 1795500000}}]}')
    (row,), bad = jobs(sacct, doc, ctx=Context(path="huge.json", header=doc))
    assert (row["job_id"], row["state"], row["start_ts"], row["end_ts"], row["nnodes"], bad) == (
        None, "TIMEOUT", None, None, None, 0)
    assert row["ts"] == dt.datetime(2026, 11, 24, 6, 0)


def test_sacct_json_damaged_job_is_skipped_to_the_next() -> None:
    good = _json_job(41, "TIMEOUT", 1795507201)
    bad = [*good[:3], '      "state": {"current": ["TIMEOUT"] "reason": "None"},', *good[4:]]
    text = ["{", '  "jobs": [', *bad, "    ,", *_json_job(42, "NODE_FAIL", 1795507202), "  ]", "}"]
    parsed = sacct.parse(frame(*text), Context(path="damaged.json", header="{"))
    assert parsed.tables["jobs"]["state"].to_list() == ["NODE_FAIL", "CANCELLED"]
    assert parsed.unparsed == 1 and parsed.warnings == ["line 3: sacct --json text that is no job object, skipped"]


# --- jobcomp/filetxt --------------------------------------------------------------------------

RECORD = ("JobId=15 UserId=root(0) GroupId=root(0) Name=gpt 1b run JobState=COMPLETED Partition=main "
          "TimeLimit=UNLIMITED StartTime=2026-12-03T08:41:34 EndTime=2026-12-03T08:41:35 NodeList=node[1-2] NodeCnt=2 "
          "ProcCnt=2 WorkDir=/tmp/my jobs ReservationName= Tres=cpu=2,mem=8000M,node=2,billing=2,gres/gpu=8 Account= "
          "QOS= WcKey= Cluster=unknown SubmitTime=2026-12-03T08:41:32 EligibleTime=2026-12-03T08:41:32 "
          "DerivedExitCode=0:0 ExitCode=0:9 ")


def test_jobcomp_record_with_spaces_in_name_and_workdir() -> None:
    (row,), bad = jobs(slurm_jobcomp, RECORD, ctx=BERLIN)
    assert (row["job_id"], row["job_name"], row["state"], row["nodelist"], row["nnodes"], row["ngpus"]) == (
        "15", "gpt 1b run", "COMPLETED", "node[1-2]", 2, 8)
    assert (row["exit_code"], row["signal"]) == (0, 9) and bad == 0
    assert row["start_ts"] == dt.datetime(2026, 12, 3, 7, 41, 34)


def test_jobcomp_array_task_spelled_like_sacct() -> None:
    rec = RECORD.replace("JobId=15 ", "JobId=24 ").replace(" DerivedExitCode", " ArrayJobId=22 ArrayTaskId=2 "
                                                                                "DerivedExitCode")
    (row,), _ = jobs(slurm_jobcomp, rec)
    assert row["job_id"] == "22_2"


def test_jobcomp_cancelled_while_pending_has_no_nodes_or_start() -> None:
    rec = RECORD.replace("NodeList=node[1-2] NodeCnt=2", "NodeList=(null) NodeCnt=0").replace(
        "StartTime=2026-12-03T08:41:34", "StartTime=Unknown")
    (row,), _ = jobs(slurm_jobcomp, rec)
    assert (row["nodelist"], row["nnodes"], row["start_ts"]) == (None, 0, None)


def test_jobcomp_truncated_record_is_unparsed() -> None:
    rows, bad = jobs(slurm_jobcomp, RECORD, "JobId=81263 UserId=bob(1001) GroupId=ml(1000) Name=eval JobSta")
    assert len(rows) == 1 and bad == 1


def test_jobcomp_sniff() -> None:
    assert slurm_jobcomp.sniff(RECORD.encode() + b"\n", "jobcomp.txt")
    assert not slurm_jobcomp.sniff(b"JobId=15 is mentioned in prose\n", "notes.txt")
