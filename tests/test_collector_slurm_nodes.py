"""Slurm node and job verdicts: sinfo listings, cloud provisioning logs, node reasons, sacct / jobcomp job states."""

from __future__ import annotations

from test_collector_slurm import BERLIN, events, frame

from clusterlab.collectors import sacct, scontrol, sinfo, slurm, slurm_cloud, slurm_jobcomp, slurmctld
from clusterlab.collectors._base import Context

UTC = Context(path="excerpt.log")


def test_sinfo_R_reads_a_reason_with_spaces_and_explodes_the_node_list() -> None:
    rows = events(sinfo, "REASON               USER      TIMESTAMP           NODELIST",
                  "Not responding       slurm     2026-12-03T08:21:40 gpu-[011-012]", ctx=BERLIN)
    assert [(r["host"], r["failure_mode"], r["detail"]["reason"]) for r in rows] == [
        ("gpu-011", "node_failure", "Not responding"), ("gpu-012", "node_failure", "Not responding")]
    assert str(rows[0]["ts"]) == "2026-12-03 07:21:40"


def test_sinfo_a_persons_drain_reason_is_no_failure_an_xid_is_the_gpus() -> None:
    maint, xid = events(sinfo, "REASON               USER      TIMESTAMP           NODELIST",
                        "rack maintenance     ops       2026-12-03T09:00:00 gpu-030",
                        "Xid 79 GPU lost      ops       2026-12-03T09:01:00 gpu-031")
    assert (maint["failure_mode"], xid["failure_mode"], xid["xid"]) == (None, "gpu_fell_off_bus", 79)


def test_sinfo_long_node_listing_keeps_only_nodes_set_aside() -> None:
    rows = events(sinfo, "Thu Dec  3 09:05:12 2026",
                  "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON",
                  "gpu-010        1      gpu*       mixed  224   2:56:2 2000000        0      1   (null) none",
                  "gpu-011        1      gpu*      down*   224   2:56:2 2000000        0      1   (null) none")
    assert [(r["host"], r["failure_mode"], r["detail"]["state"]) for r in rows] == [
        ("gpu-011", "node_failure", "down*")]
    assert str(rows[0]["ts"]) == "2026-12-03 09:05:12"


def test_sinfo_inside_a_playbooks_quotes_and_sniff() -> None:
    head = '    "REASON               USER      TIMESTAMP           NODELIST",\n'
    row = '    "cloud_node_fail      slurm     2026-04-07T09:12:31 viz-1",'
    assert sinfo.sniff(head.encode(), "ci.log")
    assert not sinfo.sniff(b"REASON: none\nnode01 idle\n", "x.log")
    (ev,) = events(sinfo, head.rstrip("\n"), row)
    assert (ev["host"], ev["failure_mode"]) == ("viz-1", "node_failure")


def test_sinfo_rows_without_a_header_are_not_read() -> None:
    assert events(sinfo, "Not responding       slurm     2026-12-03T08:21:40 gpu-011") == []


def test_cloud_resume_failure_names_each_node_and_the_repeat_is_a_consequence() -> None:
    failed, down = events(
        slurm_cloud,
        "2026-12-03 08:30:04,912 - [slurm_plugin.resume:_resume] - ERROR - Failed to launch following nodes, "
        "setting nodes to down: (x2) ['q-dy-a-1', 'q-dy-a-2']",
        "2026-12-03 08:30:04,913 - [slurm_plugin.resume:_handle_failed_nodes] - INFO - Setting following failed "
        "nodes into DOWN state: (x1) ['q-dy-a-1']")[1:]
    assert (failed["host"], failed["failure_mode"], down["failure_mode"]) == ("q-dy-a-2", "node_failure", None)


def test_cloud_instance_missing_names_the_node_without_its_address() -> None:
    (ev,) = events(slurm_cloud, "2026-05-11 08:31:40,514 - 4182 - [slurm_plugin.slurm_resources:is_backing_"
                   "instance_valid] - WARNING - Node state check: no corresponding instance in EC2 for node "
                   "q-dy-b-3(10.8.3.41), node state: ALLOCATED+CLOUD+NOT_RESPONDING")
    assert (ev["host"], ev["kind"], ev["failure_mode"]) == ("q-dy-b-3", "cloud_instance_missing", "node_failure")
    assert str(ev["ts"]) == "2026-05-11 08:31:40.514000"


def test_slurmctld_health_check_reason_is_a_node_failure() -> None:
    (ev,) = events(slurmctld, "[2026-06-03T01:24:02.517] update_node: node cloud-4 reason set to: "
                              "Scheduler health check failed")
    assert (ev["host"], ev["failure_mode"]) == ("cloud-4", "node_failure")


def _job_events(mod, *texts: str) -> list[tuple[str, str]]:
    parsed = mod.parse(frame(*texts), UTC)
    ev = parsed.tables.get("events")
    return [] if ev is None else list(zip(ev["kind"], ev["failure_mode"], strict=True))


def test_sacct_failed_states_of_allocations_become_events_steps_and_cancels_do_not() -> None:
    got = _job_events(sacct, "JobID|State|ExitCode", "7|TIMEOUT|0:0", "7.batch|CANCELLED|0:15", "8|CANCELLED by 0|0:0",
                      "9|FAILED|1:0", "9.0|FAILED|1:0", "10|OUT_OF_MEMORY|0:125", "11|COMPLETED|0:0",
                      "12|NODE_FAIL|0:0", "13|PREEMPTED|0:0")
    assert got == [("slurm_job_state", "time_limit"), ("slurm_job_state", "user_code_error"),
                   ("slurm_job_state", "host_oom"), ("slurm_job_state", "node_failure"),
                   ("slurm_job_state", "preemption")]


def test_sacct_table_pasted_under_its_command_is_read() -> None:
    text = (b"$ sacct -j 88_3 --format=JobID,JobName,State,ExitCode\n"
            b"JobID           JobName      State ExitCode \n------------ ---------- ---------- -------- \n"
            b"88_3            run.sh     FAILED      1:0 \n")
    assert sacct.sniff(text, "sacct.txt")
    got = _job_events(sacct, *text.decode().splitlines())
    assert got == [("slurm_job_state", "user_code_error")]


def test_jobcomp_timeout_record_is_a_time_limit_event() -> None:
    got = _job_events(slurm_jobcomp, "JobId=4 UserId=u(1000) GroupId=u(1000) Name=train JobState=TIMEOUT "
                      "Partition=gpu TimeLimit=60 StartTime=2026-12-03T08:00:00 EndTime=2026-12-03T09:00:00 "
                      "NodeList=gpu-001 NodeCnt=1 ProcCnt=8 ExitCode=0:0")
    assert got == [("slurm_job_state", "time_limit")]


def test_a_task_exit_after_its_job_was_killed_is_the_kills_consequence() -> None:
    rows = events(slurm, "srun: error: n1: task 0: Exited with exit code 1",
                  "slurmstepd: error: *** JOB 5 ON n1 CANCELLED AT 2026-12-03T08:00:00 DUE TO TIME LIMIT ***",
                  "srun: error: n2: task 1: Exited with exit code 1")
    assert [r["failure_mode"] for r in rows] == ["user_code_error", "time_limit", None]


def test_slurmctld_prolog_failure_drains_the_node() -> None:
    (ev,) = events(slurmctld, "[2026-06-03T01:24:02.517] error: validate_node_specs: Prolog or job env setup "
                              "failure on node gpu-007, draining the node")
    assert (ev["host"], ev["kind"], ev["failure_mode"]) == ("gpu-007", "slurm_prolog_fail", "node_failure")


def test_scontrol_node_record_down_not_responding_and_a_job_that_timed_out() -> None:
    rows = events(scontrol, "NodeName=gpu-011 Arch=x86_64 CoresPerSocket=56", "   CPUAlloc=0 CPUTot=224",
                  "   State=DOWN+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1",
                  "   Reason=Not responding [slurm@2026-12-03T08:21:40]",
                  "NodeName=gpu-012 Arch=x86_64 CoresPerSocket=56", "   State=IDLE ThreadsPerCore=2",
                  "JobId=81301 JobName=pretrain", "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)",
                  "JobId=81302 JobName=eval", "   JobState=CANCELLED Reason=None Dependency=(null)")
    assert [(r["kind"], r["host"], r["failure_mode"]) for r in rows] == [
        ("scontrol_node", "gpu-011", "node_failure"), ("slurm_job_state", None, "time_limit")]
    assert scontrol.sniff(b"$ scontrol show node gpu-011\nNodeName=gpu-011 Arch=x86_64 CoresPerSocket=56\n", "x")


def test_a_node_that_registers_with_less_than_configured_is_a_node_failure() -> None:
    inval, low = events(slurmctld, "[2026-06-03T01:24:02.517] error: Setting node gpu-3 state to INVAL with reason:"
                                   "gres/gpu count reported lower than configured (7 < 8)",
                        "[2026-06-03T01:24:03.001] error: Node gpu-4 has low real_memory size (1900000 < 2000000)")
    assert [(r["host"], r["failure_mode"]) for r in (inval, low)] == [("gpu-3", "node_failure"),
                                                                      ("gpu-4", "node_failure")]


def test_slurmd_prolog_failure_and_unkillable_step_are_node_failures() -> None:
    pro, stuck = events(slurm, "[2026-06-03T01:24:02.517] error: [job 4711] prolog failed status=1:0",
                        "slurmstepd: error: *** JOB 4711 STEPD TERMINATED ON gpu-5 AT 2026-06-03T01:30:00 DUE TO JOB "
                        "NOT ENDING WITH SIGNALS ***")
    assert (pro["failure_mode"], stuck["failure_mode"], stuck["host"]) == ("node_failure", "node_failure", "gpu-5")


def test_within_a_run_a_cancel_is_the_manual_stop_and_an_exit_status_blames_nothing() -> None:
    run = Context(path="slurm-9.out", run="pretrain")
    texts = ("srun: error: n1: task 0: Exited with exit code 1",
             "slurmstepd: error: *** STEP 9.0 ON n1 CANCELLED AT 2026-12-03T08:00:00 DUE TO TASK FAILURE ***",
             "slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2026-12-03T08:00:01 ***")
    assert [r["failure_mode"] for r in events(slurm, *texts, ctx=run)] == [None, None, "manual_stop"]
    assert [r["failure_mode"] for r in events(slurm, *texts, ctx=UTC)] == ["user_code_error", "user_code_error", None]
    parsed = sacct.parse(frame("JobID|State|ExitCode", "9|FAILED|1:0", "10|TIMEOUT|0:0"), run)
    assert parsed.tables["events"]["failure_mode"].to_list() == ["time_limit"]


def test_sinfo_reasons_cut_at_twenty_characters_still_say_the_node_failed() -> None:
    rows = events(sinfo, "REASON               USER      TIMESTAMP           NODELIST",
                  "ResumeTimeout reache root      2026-12-03T08:21:40 cloud-1",
                  "Scheduler health che root      2026-12-03T08:21:41 cloud-2",
                  "Node unexpectedly re root      2026-12-03T08:21:42 cloud-3")
    assert [r["failure_mode"] for r in rows] == ["node_failure"] * 3


def test_a_task_that_crashed_on_its_own_is_the_applications_failure_a_sigkill_is_not_said() -> None:
    segv, killed = events(slurm, "srun: error: gpu-021: task 33: Segmentation fault (core dumped)",
                          "srun: error: gpu-021: task 34: Killed")
    assert (segv["failure_mode"], killed["failure_mode"]) == ("user_code_error", None)
