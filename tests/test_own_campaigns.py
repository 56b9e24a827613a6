"""Our own campaigns (tests/campaigns/), each written in the outsiders' shape before its author read the analysis,
scored with the outsiders' scorer: every incident on its failure mode, host and attempt, no decoy blamed, no false
incident, every ledger category within the scorer's bar.

- bloom_opt: the BLOOM-176B / OPT-175B chronicles at 1/3 scale (Megatron-DeepSpeed's undated iteration lines, a
  Lustre hang leaving an incomplete `latest` the next launch dies loading, a divergence then a deliberate rollback,
  a GPU 6.5 % slow for a whole attempt, a requeued job appending to one slurm-J.out);
- llama3_requeue: one `--requeue --open-mode=append` job through the Llama 3 interruption table (HF Trainer under
  `torchrun --tee`, appended per-rank step files, a hung rank, silent data corruption, a maintenance reboot);
- deepspeed_pdsh: DeepSpeed over pdsh on a static reservation without a scheduler (a host OOM, an IB port flap, the
  dataset's NFS server, a thermally throttled GPU, a desync report, a Ctrl-C);
- nemo_ft: NeMo / Megatron under NVRx's ft_launcher (in-job restarts in one slurm-J.out per job, Xid 119, NVLink,
  PCIe AER then Xid 79, a checkpoint directory the provider wiped, 10x slow saves on a degraded Lustre);
- megatron_hangs: Megatron-Core on Slurm whose losses are hangs (a rank wedged on Xid 119, a data read hung in a FUSE
  mount, an IB link its neighbours name, a rank that stops enqueueing), an NVLink Xid 74, a GPU 6 % slow seen only in
  a per-rank probe every tenth step, unstamped iteration lines, one slurm-%j.out per job in one folder;
- titan_k8s: torchtitan under a Kubeflow PyTorchJob on a rented Kubernetes pool (CRI pod logs, event-exporter JSON,
  journalctl -k in three styles; torchelastic's in-pod restarts and the operator's recreated pods as attempts; a
  DCP save failing on an NFS PVC, an OOMKilled container, a wedged rank, Xid 79 then NotReady, a power-braked GPU
  then a maintenance drain, Xid 48, a corrupt data shard twice);
- composer_pyxis: LLM Foundry / Composer on Slurm in pyxis containers with NHC (undated console blocks timed by
  SpeedMonitor's throughput, a failed image pull with no stamped line, an uncorrectable ECC error then the same GPU
  dying at init, an IB port NHC drains, a Lustre OST every host loses, a corrupt MDS shard, a scancel, a 7 % slow
  GPU in per-rank timings);
- slurm_multitenant: a chain of Megatron-Core jobs on a shared 40-node Slurm cluster whose controller log and sacct
  hold other tenants' jobs, drains and node failures (Xid 119 hang, a time limit a minute after a save then an epilog
  drain, Xid 48/64 twice on one GPU, a user's illegal-address bug on every host twice, a Lustre OST outage, an admin's
  `scontrol reboot` cancel, a silent node death its peers' network errors date);
- lightning_slurm: a PyTorch Lightning + DeepSpeed fine-tune in one `--requeue --open-mode=append` Slurm job (one
  slurm-J.out, tqdm bars with carriage returns, Lightning's SIGUSR1 auto-requeue, a dead rail leaf switch, Xid 79, a
  preemption Lightning steps past, a host OOM kill, a save stalled on a Lustre OST, a NaN loss then a rollback,
  NODE_FAIL);
- gpu_health_twoprov: DeepSpeed on two providers' partitions of one Slurm controller, told by GPU health tools
  (`nvidia-smi -q` HW Slowdown before an Xid 79, `nvidia-smi nvlink -e` CRC counts before an Xid 74 hang, contained
  Xid 94 vs uncontained Xid 95, a PCIe link at x8 in per-rank timings, `dcgmi diag` failures outside the run);
- elastic_hangs: torchtitan under `srun torchrun --max-restarts=2` (in-place restarts as attempts; an IB flap's
  `unhandled system error`, Xid 109 with the heartbeat monitor, the c10d store host dying under its peers' TCPStore
  resets, an OOM-killed DataLoader worker, a CPU-side deadlock only the flight recorder's enqueue counts show, Xid
  119 behind peers' timeouts, a time limit);
- pcluster_efa: Megatron-LM on AWS ParallelCluster (p5 nodes Slurm powers up and down, aws-ofi-nccl over EFA, FSx
  for Lustre): an EFA fault seen as quoted NET/OFI completion errors, Xid 79, a divergence rolled back to an older
  checkpoint, every Lustre client evicted during a save, an EC2 status-check failure clustermgtd replaces, Xid 94, a
  time limit; InsufficientInstanceCapacity at resume and power-save decoys);
- ib_fabric_storage: Megatron-LM with torch 2.1 (unstamped watchdog lines) and NCCL 2.18 (IB errors that only the
  watchdog ends) in one flat logs/ folder, on a provider whose fabric and Lustre misbehave: a rail leaf switch flap
  four hosts report (the switch, not a host), one host's flapping HCA port, an OST lost during a save, Xid 79 then a
  NODE_FAIL requeue appended to the same slurm-J.out, a hung rank only per-rank records show; link-bounce, Lustre-
  and NFS-blip, client-reregistration and off-job Xid 13 decoys);
- sdc_rollbacks: torchtitan on Slurm, one sbatch per attempt (per-rank step JSONL with NaN / Infinity tokens,
  nvidia-smi -q snapshots): Xid 48 then the same GPU dying at init, a thermally throttled GPU for a whole attempt, a
  time limit, a lost newest checkpoint whose DCP load fails, a creeping divergence rolled back with a lower LR, one
  host's SDC that spreads to every rank a step later (a poisoned save in some seeds); loss-spike, clip-warning, inf
  validation loss and correctable-ECC decoys);
- clocks_requeue: Megatron in one `sbatch --requeue --open-mode=append` job on a cluster kept in Europe/Berlin local
  time (slurmctld, sacct, dmesg -T, journal short-iso with offset), node clocks minutes off and no per-rank timings:
  Xid 79 stamped after the peers' errors it caused, a Lustre outage, a hung rank, a silent node death, a user's
  traceback, a time limit; old-Xid, borrowed-stamp and retried-socket decoys;
- undated_text: Megatron-LM on Slurm whose evidence mostly carries no time (unstamped iteration lines, torch 2.3's
  unstamped ProcessGroupNCCL lines, NCCL_DEBUG_FILE per-rank files without timestamps, plain `dmesg` dated only by
  `uptime -s` / `last -x reboot` / rtc_cmos or not at all), bounded by a dated sacct and slurmctld: Xid 79, a rail
  leaf switch flap four hosts report (the fabric, no host), one host's HCA its peers name, a rank that never joins
  an all-reduce, a Lustre OST lost during a save, a time limit; async-event, corrected-AER and old-Xid decoys;
- gpfs_dcgm_utc: a plain torchrun + FSDP script logging in UTC (`Z`) from its container on an IBM Storage Scale site
  whose Slurm, syslog and `date` print America/Chicago local time across the end of DST (no zone in the
  inventory): a GPFS expel during a save (mmfs.log), Xid 95 then an epilog `dcgmi diag` failure, a prolog `dcgmi
  diag` failure that drains a node and requeues the job before its script runs, an NVLink Xid 74, a time limit;
  GPFS-info, passing-diag-with-warning, NVLink-replay and idle-PCIe-downgrade decoys;
- old_stack: a Megatron-LM (2021) job on a rented A100 cluster's older stack (CentOS 7 `/var/log/messages` without a
  year, rotated; driver 470 Xids; NCCL 2.10 printed to stdout; torch 1.10 `torch.distributed.launch` with the 30 min
  watchdog; unstamped iteration lines; Slurm 20.11 slurmctld and `sacct -P`): Xid 79 found by the watchdog 30 min
  later, an IB port down its rail peers name, a cgroup OOM kill, a node that reboots under the job (dated by the
  controller's `last response`), an NFS server every host loses during a save, a time limit; old-Xid-and-reboot,
  GID-table-change, corrected-EDAC, Xid 63 and idle-spare NFS-blip decoys;
- azure_nd_accelerate: HF Trainer + DeepSpeed ZeRO-3 under accelerate on Azure ND H100 v5 VMs (CycleCloud Slurm): an
  Xid 94 / row-remap-pending GPU that fails again (Xid 48/64) four attempts later, a BlobFuse2 mount throttled on five
  hosts (DataLoader workers' re-raised `OSError: [Errno 5]`), a rank that stops first, a platform Reboot from Azure's
  Scheduled Events, a host OOM, a time limit; a Freeze the job survives, hv_netvsc and IB-flap decoys, an inventory
  with a key of its own (first contact 5/7 at seeds 1-3, then 7/7 with the ledger within the bar);
- skypilot_spot: a SkyPilot managed job of DeepSpeed ZeRO-3 on spot VMs recovering AWS -> GCP -> AWS (run.log's
  `(workerN, rank=N, pid=..., ip=...)` prefixes, EventBridge and IMDS spot notices, `describe-instances` text, GCE
  operations): a spot reclaim only its notice announces, Xid 79 before GCE's hostError, a hung rank, a gcsfuse upload
  failure during a save, a user's eval bug on every rank; an evaluation pass inside the step clock (first contact 4/5
  at seeds 1-3, the reclaim blamed on a peer's network errors, 4.4-4.7 GPU-h of slowdown that was evaluation);
- imbue_70b: Imbue's 70B bare-metal fleet at 1/25 scale (Megatron-LM under Slurm, NCCL 2.18 unstamped in the job's
  output): an IB port that flaps then goes down (its ring neighbours' NET/IB errors are symptoms), Xid 119 with hung
  tasks, a silent power loss its journal never mentions, a fatal AER then Xid 79, a 7 % slow GPU a health-check sweep
  job drains; a NIC's corrected AER every few hours and an idle spare's Xid 43 as decoys (first contact 4/4 at seeds
  1 and 3; 2/4 at seed 2, the NIC's scattered corrected errors read as a flood);
- megascale: MegaScale's failure experiences (RoCE NIC flaps, a Lustre OST stalling a save on every host, Xid 48/63/94
  behind an unhosted CUDA traceback, a rank that silently stops first, a straggler in per-rank timings; 5/5 at first
  contact, seeds 1-3);
- wilderness: one run across three providers (Yi Tay's hardware lottery): Xid 79, a node lost mid-write, a rank one
  collective behind, a Lustre OST lost during a save, a wiped checkpoint directory then a launch from scratch, then
  the first cluster's older checkpoint found again (first contact: 6/6 incidents, but the work that checkpoint held
  counted as thrown away: productive 2035 vs 4302 GPU-h);
- meta_rsc: one run through the failures Meta's RSC reliability paper counts (NVLink Xid 74, a GPU lost from the bus
  while the node was idle then a job dying at start-up one device short, a Lustre client evicted and not remounted
  then a job dying in seconds, an IB link, a cgroup OOM, a preemption requeue appending to the same output, a fatal
  AER; first contact 5/7, the two start-up deaths unexplained, and 78 GPU-h of idle from a requeued run's own
  directory numbered as another attempt);
- hyperpod: SageMaker HyperPod's auto-resume (each relaunch a job step of one allocation, `job-J/` folders, the
  health agent's events, EFA, an FSx eviction, a thermal straggler, a user's eval bug; first contact 5/5 but the
  steps' own spans unused: hang 31 vs 24 GPU-h). Not scored here: Megatron prints its evaluation passes without a
  start line, and their ~1 GPU-h is booked as slowdown where the campaign's truth books it productive."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign_scoring import SCORER, score

CAMPAIGNS = Path(__file__).parent / "campaigns"

pytestmark = pytest.mark.skipif(not SCORER.exists(), reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "seed"), [("bloom_opt", None), ("bloom_opt", 1), ("llama3_requeue", 1),
                                            ("deepspeed_pdsh", None), ("nemo_ft", 2),
                                            ("megatron_hangs", None), ("titan_k8s", None), ("composer_pyxis", None),
                                            ("slurm_multitenant", None), ("lightning_slurm", None),
                                            ("gpu_health_twoprov", None), ("elastic_hangs", None),
                                            ("pcluster_efa", None), ("ib_fabric_storage", None),
                                            ("sdc_rollbacks", None), ("clocks_requeue", None),
                                            ("undated_text", None), ("gpfs_dcgm_utc", None),
                                            ("old_stack", 1), ("azure_nd_accelerate", 2), ("skypilot_spot", None),
                                            ("imbue_70b", 2), ("megascale", None), ("wilderness", None),
                                            ("meta_rsc", None)])
def test_own_campaign_scores_every_incident_and_the_ledger(name: str, seed: int | None) -> None:
    score(CAMPAIGNS / f"{name}.py", seed)
