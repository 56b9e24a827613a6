"""A node drained by LBNL Node Health Check names the check that failed (`NHC: check_hw_ib:  No IB port mlx5_4:1 is
ACTIVE (LinkUp 400 Gb/sec).`): the check says what broke, as an Xid in a reason does, not merely that the node
failed. An IB port check is the node's own network, a mount check its filesystem, a GPU health monitor its GPU, a
machine-check or memory check its host; a check of processes or files says no more than that the node failed. A
drain for the node's own port outranks what the other ranks say about the network, as the kernel's link down does."""

from __future__ import annotations

import polars as pl
from test_collector_slurm import events
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.collectors import scontrol, sinfo, slurmctld
from clusterlab.ingest import attempts


def _ctld(reason: str) -> str | None:
    (ev,) = events(slurmctld, f"[2026-07-19T11:02:40.118] update_node: node hx-21 reason set to: {reason}")
    assert ev["host"] == "hx-21"
    return ev["failure_mode"]


def test_slurmctld_nhc_reasons_name_the_failed_part() -> None:
    assert _ctld("NHC: check_hw_ib:  No IB port mlx5_4:1 is ACTIVE (LinkUp 400 Gb/sec).") == "network"
    assert _ctld("NHC: check_hw_eth:  No Ethernet device found matching bond0") == "network"
    assert _ctld("NHC: check_fs_mount:  /weka not mounted") == "filesystem_io"
    assert _ctld("NHC: check_nv_healthmon:  GPU 3 health check failed") == "gpu_hw_other"
    assert _ctld("NHC: check_hw_mcelog:  1 MCE errors found") == "host_hw"
    assert _ctld("NHC: check_ps_service:  Service sshd (process sshd) not running") == "node_failure"


def test_sinfo_cut_nhc_reason_and_scontrol_record() -> None:
    ib, gpu = events(sinfo, "REASON               USER      TIMESTAMP           NODELIST",
                     "NHC: check_hw_ib:  N root      2026-07-19T11:03:00 hx-21",
                     "NHC: check_nv_health root      2026-07-19T11:03:00 hx-22")
    assert (ib["failure_mode"], gpu["failure_mode"]) == ("network", "gpu_hw_other")
    rows = events(scontrol, "NodeName=hx-23 Arch=x86_64 CoresPerSocket=56",
                  "   State=DRAINED ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
                  "   Reason=NHC: check_fs_mount:  /weka not mounted [root@2026-07-19T11:04:10]")
    assert [(r["host"], r["failure_mode"]) for r in rows if r["failure_mode"]] == [("hx-23", "filesystem_io")]


HOSTS = ["hx-21", "hx-22", "hx-23"]
END = 20 + 100 * 4.0


def test_a_drain_for_the_nodes_own_port_outranks_the_ranks_network_errors() -> None:
    with Lab(":memory:") as lab:
        write_run(lab.con, "nh", 24, [Attempt(0, 20, [4.0] * 100, hosts=HOSTS),
                                      Attempt(1200, 30, [4.0] * 30, hosts=HOSTS)])
        lab.con.execute("INSERT INTO facts (file_id, run, attempt, line, host, key, value, ts) "
                        "SELECT 1, 'nh', a, h, 'hx-2' || h, 'nccl_bootstrap_if', 'ib0', "
                        "TIMESTAMP '2026-11-24 08:00:00' + to_seconds(CASE a WHEN 1 THEN 25 ELSE 1235 END) "
                        "FROM range(1, 3) x(a), range(1, 4) y(h)")
        attempts.refresh(lab.con)
        # every rank reports the network error (the ranks of hx-22 and hx-23 about their peer, hx-21's own)
        write_events(lab.con, [{"t": END + 3, "source": "torch", "kind": "nccl_error", "failure_mode": "network",
                                "host": h, "text": "NCCL error: remote process exited or there was a network error"}
                               for h in HOSTS], run="nh", attempt=1, name="slurm-5200.out")
        write_events(lab.con, [{"t": END + 40, "source": "slurmctld", "kind": "slurm_node_reason",
                                "failure_mode": "network", "host": "hx-21",
                                "text": "update_node: node hx-21 reason set to: NHC: check_hw_ib:  No IB port "
                                        "mlx5_4:1 is ACTIVE (LinkUp 400 Gb/sec)."}], name="slurmctld.log")
        end = lab.incidents("nh").filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 1).row(0, named=True)
        assert (end["failure_mode"], end["host"]) == ("network", "hx-21"), end
