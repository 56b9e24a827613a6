"""The classes of defect the tenth round of real excerpts showed (tests/real_excerpts/mixed_beyond10.toml), each
stated on shapes of its own: a cloud storage FUSE daemon's own log (gcsfuse's text or JSON records, BlobFuse2's
syslog or own-file records) saying a file operation failed with an I/O error is the storage failing the job, its
cancelled operations and start-up lines are not; Python's ENOTCONN on a path is a FUSE mount whose daemon died (on a
socket it is not); fabric manager's log of a fatal NVSwitch error (an SXid) is an NVLink fault, a non-fatal one a
notice; the remapped-rows CSV query reads as `nvidia-smi -q`'s Remapped Rows section; Compute Engine's
hostError / terminateOnHostMaintenance system events are a host failure / the provider's maintenance, a live
migration neither; XLA's own report of a failed NCCL call carries the mode NCCL's result names; NHC's log of a
failed check carries the check's mode; Open MPI losing a remote daemon is a lost node; the EFA device not completing
the driver's admin commands is a network fault, as mlx5's command timeouts are."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import modes as _modes


@pytest.mark.parametrize(("text", "name"), [
    # gcsfuse's text form, a write the mount failed
    ('time="07/02/2026 21:10:04.000118" severity=INFO message="fuse_debug: Op 0x00000a11 connection.go:420] <- '
     'WriteFile (inode 12, PID 901, handle 3, offset 0, 4096 bytes)"\n'
     'time="07/02/2026 21:10:09.402211" severity=ERROR message="WriteFile: input/output error, '
     'CreateObject: googleapi: Error 502: Bad Gateway"\n'
     'time="07/02/2026 21:10:09.402300" severity=ERROR message="fuse: *fuseops.WriteFileOp error: input/output '
     'error"\n', "mount.log"),
    # the JSON form before 2.0 (name / levelname / timestampSeconds)
    ('{"name":"root","levelname":"INFO","severity":"INFO","message":"Opening GCS connection...\\n",'
     '"timestampSeconds":1782000000,"timestampNanos":1000}\n'
     '{"name":"root","levelname":"ERROR","severity":"ERROR","message":"ReadFile: input/output error, '
     'fh.reader.ReadAt: readFull: unexpected EOF","timestampSeconds":1782000301,"timestampNanos":52000}\n'
     '{"name":"root","levelname":"INFO","severity":"INFO","message":"Mounting file system \\"b\\"...",'
     '"timestampSeconds":1782000302,"timestampNanos":0}\n', "gcsfuse.json"),
])
def test_a_gcsfuse_operation_answered_with_an_io_error_is_filesystem_io(tmp_path: Path, text: str,
                                                                          name: str) -> None:
    assert _modes(tmp_path, text, name) == {"filesystem_io"}


def test_gcsfuse_errors_that_are_not_the_storage_failing_are_no_fault(tmp_path: Path) -> None:
    text = ('time="07/02/2026 21:00:00.000118" severity=INFO message="File system has been successfully mounted."\n'
            'time="07/02/2026 21:03:11.100000" severity=ERROR message="ReadFile: interrupted system call, '
            'fh.reader.ReadAt: readFull: context canceled"\n'
            'time="07/02/2026 21:03:12.200000" severity=ERROR message="fuse: *fuseops.FallocateOp error: function '
            'not implemented"\n'
            'time="07/02/2026 21:03:13.300000" severity=ERROR message="LookUpInode: no such file or directory"\n')
    assert _modes(tmp_path, text, "gcsfuse.log") == set()


def test_a_blobfuse2_read_it_failed_in_its_own_file_log_is_filesystem_io(tmp_path: Path) -> None:
    text = ("Thu Jul  2 21:10:00 UTC 2026 : blobfuse2[5120] : [/mnt/ds] LOG_CRIT [mount.go (432)]: Starting "
            "Blobfuse2 Mount : 2.5.0 on [Rocky Linux 9.4]\n"
            "Thu Jul  2 21:40:02 UTC 2026 : blobfuse2[5120] : [/mnt/ds] LOG_ERR [libfuse_handler.go (719)]: "
            "Libfuse::libfuse_read : error reading file part-0007.parquet, handle: 88 [input/output error]\n"
            "Thu Jul  2 21:40:02 UTC 2026 : blobfuse2[5120] : [/mnt/ds] LOG_INFO [block_cache.go (404)]: "
            "BlockCache::closeFileInternal : name=part-0007.parquet, handle=88\n")
    assert _modes(tmp_path, text, "blobfuse2.log") == {"filesystem_io"}


def test_blobfuse2_start_up_and_configuration_lines_are_no_fault(tmp_path: Path) -> None:
    text = ("Jul  2 21:10:00 vm-3 blobfuse2[5120]: [/mnt/ds] LOG_CRIT [mount.go (432)]: Starting Blobfuse2 Mount : "
            "2.5.0 on [Rocky Linux 9.4]\n"
            "Jul  2 21:10:00 vm-3 blobfuse2[5120]: [/mnt/ds] LOG_ERR [pipeline.go (69)]: Pipeline: error creating "
            "pipeline component file_cache [config error in file_cache error [tmp-path not set]]\n"
            "Jul  2 21:10:00 vm-3 blobfuse2[5120]: [/mnt/ds] LOG_CRIT [mount.go (434)]: Logging level set to : "
            "LOG_WARNING\n")
    assert _modes(tmp_path, text, "syslog") == set()


def test_enotconn_on_a_path_is_a_dead_fuse_mount(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/w/load.py", line 12, in <module>\n'
            "    arr = np.load(path)\n"
            "OSError: [Errno 107] Transport endpoint is not connected: '/mnt/s3/shards/0001.npy'\n")
    assert _modes(tmp_path, text, "job.err") == {"filesystem_io"}


def test_enotconn_on_a_socket_is_not_the_storage(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/w/serve.py", line 40, in close\n'
            "    self.sock.shutdown(socket.SHUT_RDWR)\n"
            "OSError: [Errno 107] Transport endpoint is not connected\n")
    assert "filesystem_io" not in _modes(tmp_path, text, "job.err")


def test_fabric_manager_fatal_nvswitch_error_is_an_nvlink_fault(tmp_path: Path) -> None:
    text = ("[Jul 02 2026 20:00:01] [INFO] [tid 900] Connected to 1 node.\n"
            "[Jul 02 2026 21:14:40] [ERROR] [tid 913] detected NVSwitch fatal error 24004 on fid 0 on NVSwitch pci "
            "bus id 00000000:c1:00.0 physical id 5 port 12\n")
    assert _modes(tmp_path, text, "fabricmanager.log") == {"nvlink_error"}


def test_fabric_manager_non_fatal_nvswitch_error_is_a_notice(tmp_path: Path) -> None:
    text = ("[Jul 02 2026 20:00:01] [INFO] [tid 900] Connected to 1 node.\n"
            "[Jul 02 2026 21:14:40] [ERROR] [tid 913] detected NVSwitch non-fatal error 12021 on fid 0 on NVSwitch "
            "pci bus id 00000000:c1:00.0 physical id 5 port 12\n"
            "[Jul 02 2026 21:15:02] [INFO] [tid 900] Received an inband message\n")
    assert _modes(tmp_path, text, "fabricmanager.log") == set()


def test_remapped_rows_query_failure_is_gpu_memory(tmp_path: Path) -> None:
    text = ("gpu_uuid, remapped_rows.correctable, remapped_rows.uncorrectable, remapped_rows.pending, "
            "remapped_rows.failure\n"
            "GPU-1f0c, 0, 0, No, No\n"
            "GPU-77a2, 0, 9, No, Yes\n")
    assert _modes(tmp_path, text, "remap.csv") == {"gpu_memory_ecc"}


def test_remapped_rows_history_alone_is_no_fault(tmp_path: Path) -> None:
    text = ("gpu_bus_id, remapped_rows.correctable, remapped_rows.uncorrectable, remapped_rows.pending, "
            "remapped_rows.failure\n"
            "00000000:0A:00.0, 2, 1, No, No\n"
            "00000000:0B:00.0, 0, 0, No, No\n")
    assert _modes(tmp_path, text, "remap.csv") == set()


@pytest.mark.parametrize(("text", "mode"), [
    # the audit log's system event as 'gcloud logging read --format=json' prints its fields
    ('{"protoPayload": {"methodName": "compute.instances.hostError", "resourceName": '
     '"projects/p/zones/europe-west4-a/instances/gpu-12"}, "severity": "INFO"}\n', "node_failure"),
    ("systemevent-1782000123  compute.instances.terminateOnHostMaintenance  europe-west4-a/instances/gpu-12  DONE\n",
     "preemption"),
])
def test_compute_engine_system_events_that_take_the_vm(tmp_path: Path, text: str, mode: str) -> None:
    assert _modes(tmp_path, text, "events.txt") == {mode}


def test_a_live_migration_is_no_fault(tmp_path: Path) -> None:
    text = "systemevent-1782000999  compute.instances.migrateOnHostMaintenance  us-east5-b/instances/gpu-3  DONE\n"
    assert _modes(tmp_path, text, "events.txt") == set()


@pytest.mark.parametrize(("result", "mode"), [
    ("remote process exited or there was a network error", "network"),
    ("invalid usage", "user_code_error"),
])
def test_xla_failed_nccl_call_carries_nccls_result(tmp_path: Path, result: str, mode: str) -> None:
    text = ("2026-07-02 21:20:00.118000: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2826] Execution "
            "of replica 2 failed: INTERNAL: external/xla/xla/service/gpu/runtime/nccl_api.cc:220: NCCL operation "
            f"ncclAllReduce(send_buffer, recv_buffer, count, dtype, op, comm, stream) failed: {result}\n")
    assert _modes(tmp_path, text, "jax.log") == {mode}


@pytest.mark.parametrize(("text", "mode"), [
    ("[1782001000] - ERROR:  nhc:  Health check failed:  check_fs_mount:  /lustre not mounted\n", "filesystem_io"),
    # run by hand: no time before it
    ("ERROR:  nhc:  Health check failed:  check_gpu_xid:  GPU Xid error detected on GPU 2\n", "gpu_hw_other"),
    ("[1782001000] - ERROR:  nhc:  Health check failed:  check_ps_service:  Service sshd not running\n",
     "node_failure"),
])
def test_nhc_failed_check_carries_the_checks_mode(tmp_path: Path, text: str, mode: str) -> None:
    assert _modes(tmp_path, text, "health.log") == {mode}


@pytest.mark.parametrize("word", ["ORTE", "PRTE"])
def test_open_mpi_losing_a_remote_daemon_is_a_lost_node(tmp_path: Path, word: str) -> None:
    text = ("--------------------------------------------------------------------------\n"
            f"{word} has lost communication with a remote daemon.\n\n"
            "  HNP daemon   : [[5120,0],0] on node c1\n"
            "  Remote daemon: [[5120,0],7] on node c8\n")
    assert _modes(tmp_path, text, "mpirun.out") == {"node_failure"}


def test_efa_admin_command_without_interrupt_is_a_network_fault(tmp_path: Path) -> None:
    text = ("[ 5120.000118] efa 0000:31:00.0: The device sent a completion but the driver didn't receive any "
            "MSI-X interrupt for admin cmd CREATE_QP(1) status 0 (id: 88, sq producer: 9, sq consumer: 9, "
            "cq consumer: 8)\n")
    assert _modes(tmp_path, text, "dmesg.txt") == {"network"}


def test_efa_driver_load_is_no_fault(tmp_path: Path) -> None:
    text = ("[   11.002100] Elastic Fabric Adapter (EFA) v2.13.0g\n"
            "[   11.118000] efa 0000:31:00.0: Setup irq:212 name:efa-mgmnt@pci:0000:31:00.0\n"
            "[   11.200100] infiniband efa_0: IB device registered\n")
    assert _modes(tmp_path, text, "dmesg.txt") == set()
