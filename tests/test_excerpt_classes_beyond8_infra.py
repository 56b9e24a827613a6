"""The classes of defect the eighth round of real excerpts showed in the kernel and NCCL areas
(tests/real_excerpts/{kernel,nccl}_beyond8.toml), each stated on shapes of its own: an mlx5 HCA whose firmware stops
answering the driver's commands (a command's timeout that leaks its slot, a command with no completion) is a network
fault; XFS shutting itself down (its own shutdown notice, its log force failing with EIO ever after) is a filesystem
fault even where no line says "I/O error"; an NCCL RAS report whose communicator table names errors (MISMATCH,
INCOMPLETE, ERROR) is read, one with only OK rows gives no failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes


@pytest.mark.parametrize("line", [
    "mlx5_core 0000:c4:00.0: wait_func:1068:(pid 5120): QUERY_VPORT_COUNTER(0x770) timeout. Will cause a leak of a "
    "command resource",
    "mlx5_core 0000:c4:00.0: wait_func_handle_exec_timeout:1062:(pid 5120): cmd[7]: MODIFY_QP(0x50a) No done "
    "completion",
])
@pytest.mark.parametrize("prefix", ["[ 1204.330117] ", "Oct  2 08:14:07 node17 kernel: ", "node17: [ 1204.330117] "])
def test_an_hca_command_that_times_out_is_a_network_fault(tmp_path: Path, line: str, prefix: str) -> None:
    assert _modes(tmp_path, (prefix + line + "\n") * 2, "dmesg.log") == {"network"}


def test_an_mlx5_line_about_a_command_that_completed_is_no_fault(tmp_path: Path) -> None:
    text = ("[ 12.004417] mlx5_core 0000:c4:00.0: firmware version: 22.36.1010\n"
            "[ 12.118204] mlx5_core 0000:c4:00.0: cmdif_revision 5, cmd exec done\n"
            "[ 12.220173] mlx5_core 0000:c4:00.0: Port module event: module 1, Cable plugged\n")
    assert _modes(tmp_path, text, "dmesg.log") == set()


@pytest.mark.parametrize("text", [
    # the log force failing with EIO every 30 s after the shutdown, alone on a console
    "[ 5021.771402] XFS (sdc1): xfs_log_force: error -5 returned.\n" * 3,
    # 4.x-6.x's shutdown notices without any 'I/O error' in them
    "Mar  3 10:01:02 st-04 kernel: XFS (md0): Corruption of in-memory data detected.  Shutting down filesystem\n"
    "Mar  3 10:01:02 st-04 kernel: XFS (md0): Please umount the filesystem and rectify the problem(s)\n",
    "[ 880.104412] XFS (nvme2n1p1): Filesystem has been shut down due to log error (0x2).\n",
])
def test_xfs_shutting_itself_down_is_a_filesystem_fault(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, text, "kern.log") == {"filesystem_io"}


def test_xfs_mount_chatter_is_no_fault(tmp_path: Path) -> None:
    text = ("[ 6.201117] XFS (sdc1): Mounting V5 Filesystem\n[ 6.299410] XFS (sdc1): Ending clean mount\n"
            "[ 6.301102] XFS (sdc1): Quotacheck needed: Please wait.\n")
    assert _modes(tmp_path, text, "kern.log") == set()


_HEAD = ("Communicators... (0.02s)\n=============\n\n"
         "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
         "    #  in group  per comm  per node  per comm  in group\n")


@pytest.mark.parametrize(("rows", "found"), [
    ("    0         2         2         4         8         8   RUNNING  MISMATCH\n", {"nccl_timeout"}),
    ("    0         1         2         4         8         7   RUNNING  INCOMPLETE\n", {"unknown"}),
    ("    1         1         2         4         8         8     ABORT  ERROR\n", {"unknown"}),
    ("    0         1         2         4         8         8   RUNNING  INCOMPLETE,MISMATCH\n", {"nccl_timeout"}),
    ("    0         1         2         4         8         8   RUNNING        OK\n"
     "    1         4         1         4         4         4   RUNNING        OK\n", set()),
])
def test_a_ras_report_is_read_by_the_errors_of_its_communicator_table(tmp_path: Path, rows: str,
                                                                      found: set[str]) -> None:
    assert _modes(tmp_path, _HEAD + rows + "\nErrors\n======\n", "ras.txt") == found


def test_a_ras_report_names_each_wrong_group_once(tmp_path: Path) -> None:
    rows = ("    0         1         2         4         8         8   RUNNING        OK\n"
            "    1         2         2         4         8         8   RUNNING  MISMATCH\n")
    assert _events(tmp_path, _HEAD + rows, "ras.txt") == [("nccl_ras_mismatch", "nccl_timeout")]
