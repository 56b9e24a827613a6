"""The classes of defect the sixth round of real excerpts showed in the kernel, NCCL and Slurm areas
(tests/real_excerpts/{kernel,nccl,slurm}_beyond6.toml), each stated on shapes of its own: IB async events that
report a state change (the subnet manager re-registering clients, a GID table update) are no network fault while a
port error or a catastrophic event stays one; NCCL 2.0-2.2's WARN format (`file:line WARN`, no "NCCL" word), with or
without its host prefix; NCCL's socket-layer errors echoed after "Last error:" behind any launcher prefix; a Slurm
node reason with its scontrol stamp pasted without its `Reason=` key."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes

_INIT = "gpu-07:4410:4602 [3] NCCL INFO comm 0x5611c2a0 rank 3 nranks 16 cudaDev 3 busId 3b000 - Init COMPLETE\n"


@pytest.mark.parametrize("event", ["client reregistration", "SM change", "LID change", "GID table change",
                                   "P_Key change", "port active"])
def test_an_ib_async_event_that_reports_a_state_change_is_no_fault(tmp_path: Path, event: str) -> None:
    warn = f"gpu-07:4410:4690 [3] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_2:1 Got async event : {event}\n"
    assert _events(tmp_path, _INIT + warn, "nccl.log") == [("ib_async_event", None)]


@pytest.mark.parametrize("event", ["port error", "local catastrophic error", "CQ error",
                                   "local access violation work queue error"])
def test_an_ib_async_event_that_reports_a_fault_stays_a_network_fault(tmp_path: Path, event: str) -> None:
    warn = f"gpu-07:4410:4690 [3] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : {event}\n"
    assert _events(tmp_path, _INIT + warn, "nccl.log") == [("ib_async_event", "network")]


@pytest.mark.parametrize("text", [
    # NCCL 2.0-2.2's debug.h: `host:pid:tid [dev] file:line WARN msg`
    "dgx-3:20117:20190 [2] transport/net_socket.cu:118 WARN Net : Connect to 10.1.4.7<41022> failed : No route to "
    "host\n",
    # ... pasted without its host part, as users quote it
    "include/socket.h:390 WARN Net : Socket creation failed : Address family not supported by protocol\n"
    "include/socket.h:390 WARN Net : Socket creation failed : Address family not supported by protocol\n",
])
def test_nccl_2_0_to_2_2_warn_lines_without_the_nccl_word_are_read(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "mpirun.out") == {"network"}


def test_a_c_source_warn_of_another_program_is_no_nccl_failure(tmp_path: Path) -> None:
    # a program of the same logging style whose WARN says nothing of sockets or IB gives no failure mode
    assert _modes(tmp_path, "src/cache.cc:212 WARN cache directory not set, using /tmp\n", "tool.log") == set()


@pytest.mark.parametrize("prefix", ["[worker1|0]:", "[trainer/3] ", "2027-03-01 10:00:02 | "])
def test_ncclsocket_errors_echoed_after_last_error_are_read_behind_any_prefix(tmp_path: Path, prefix: str) -> None:
    text = (f"{prefix}ip-10-0-3-9:812:812 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens9\n"
            f"{prefix}ncclInternalError: Internal check failed.\n"
            f"{prefix}Last error:\n"
            f"{prefix}ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)\n")
    assert _modes(tmp_path, text, "launcher.log") == {"network"}


@pytest.mark.parametrize(("line", "mode"), [
    ("Reason: Not responding [slurm@2027-01-04T11:02:09]", "node_failure"),
    ("  Kill task failed [root@2027-01-04T11:02:09]", "node_failure"),
    ("- gn-114: Node unexpectedly rebooted [slurm@2027-01-04T11:02:09]", "node_failure"),
])
def test_a_node_reason_with_its_scontrol_stamp_is_read_without_its_reason_key(tmp_path: Path, line: str,
                                                                              mode: str) -> None:
    assert _modes(tmp_path, f"Nodes down this morning:\n{line}\n", "ticket.txt") == {mode}


def test_a_stamped_reason_that_names_no_failure_gives_no_mode(tmp_path: Path) -> None:
    assert _modes(tmp_path, "Reason: planned maintenance window [ops@2027-01-04T11:02:09]\n", "ticket.txt") == set()


@pytest.mark.parametrize(("row", "mode"), [
    ("  4410  batch  train  ann PD  0:00  2 (launch failed requeued held)", "node_failure"),
    ('"  4410  batch  train  ann PENDING  0:00  1-00:00:00  2 (launch failed requeued held)",', "node_failure"),
    ("  4411  batch  train  ann PD  0:00  2 (Priority)", None),
    ("  4412  batch  train  ann PD  0:00  2 (ReqNodeNotAvail, UnavailableNodes:g[03-04])", None),
    ("  4413  batch  train  ann  R  1:02  2 g[01-02]", None),
])
def test_a_squeue_job_whose_pending_reason_says_its_node_failed_it_is_a_node_failure(tmp_path: Path, row: str,
                                                                                      mode: str | None) -> None:
    head = "  JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)"
    if "PENDING" in row:
        head = '"  JOBID PARTITION NAME USER STATE TIME TIME_LIMI NODES NODELIST(REASON)",'
    assert _modes(tmp_path, f"{head}\n{row}\n", "jobs.txt") == ({mode} if mode else set())


@pytest.mark.parametrize("warn", [
    "include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-send-0c1d-0-2-1 (size 4194304)",
    "misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-a1B2c3 to 4194308 bytes",
    "misc/shmutils.cc:140 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-a1B2c3 "
    "(size 4194304), error: No such file or directory (2)",
])
def test_an_nccl_shm_segment_failure_is_the_jobs_setup_with_or_without_a_trace(tmp_path: Path, warn: str) -> None:
    # with its host prefix and no '-> N' trace after it, and quoted bare: either way the job's own setup
    assert _modes(tmp_path, f"n-04:9001:9077 [1] {warn}\n", "nccl.log") == {"user_code_error"}
    assert _modes(tmp_path, f"{warn}\n", "nccl_bare.log") == {"user_code_error"}


@pytest.mark.parametrize("line", [
    "/home/u/run.sh: line 41: /usr/bin/cp: Input/output error",
    "cp: error writing '/lustre/proj/ckpt/step_4000/model.pt': Input/output error",
    "bash: /scratch/u/bin/launch.sh: /bin/bash: bad interpreter: Input/output error",
])
def test_a_job_scripts_tools_failing_with_eio_is_the_filesystem(tmp_path: Path, line: str) -> None:
    assert _modes(tmp_path, f"step 4000 done\n{line}\n", "slurm-88123.out") == {"filesystem_io"}


def test_eio_words_inside_a_longer_message_are_no_job_io_error(tmp_path: Path) -> None:
    events = _events(tmp_path, "data loader: retrying shard 17 after Input/output error (attempt 2 of 5)\n", "x.out")
    assert ("job_io_error", "filesystem_io") not in events
