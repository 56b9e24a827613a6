"""Slurm's side of the demo: controller logs, accounting (sacct --parsable2) and job completion (jobcomp/filetxt)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from clusterlab.simulator.demo.files import Files
from clusterlab.simulator.demo.story import (
    A1_HOSTS,
    A1_START,
    A2_HOSTS,
    A3_HOSTS,
    BURNIN_JOB,
    DS,
    DS_HOST,
    DS_JOB,
    DS_START,
    HF,
    HF_HOST,
    HF_JOB,
    HF_START,
    IB_HCA,
    IB_HOST,
    LLAMA,
    LLAMA_JOBS,
    RESERVATION,
    XID_BUS,
    XID_HOST,
    Story,
    rng,
)
from clusterlab.simulator.scheduler import CPUS, SACCT_COLS
from clusterlab.simulator.stamps import (
    after,
    ctld,
    elapsed,
    hostlist,
    iso_s,
)


@dataclass
class Job:
    cluster: str
    job_id: str
    name: str
    user: str
    uid: int
    account: str
    partition: str
    nodes: tuple[str, ...]
    submit: dt.datetime
    start: dt.datetime
    end: dt.datetime
    state: str  # sacct's State of the job line
    exit_code: str
    time_limit_min: int
    steps: list[tuple[str, str, str, str]] = field(default_factory=list)  # (suffix, name, state, exit)
    workdir: str = ""


def slurm_jobs(story: Story) -> list[Job]:
    """Every job the scheduler saw: the runs' attempts and the neighbours' jobs around them."""
    a1, a2, a3 = story.llama
    e, w = "acme-east", "acme-west"
    resv = story.t["reservation"]

    def tl(start: dt.datetime) -> int:  # --time=04:00:00 --time-min=00:10:00 before the reservation
        return min(240, int((resv - start).total_seconds() // 60))

    jobs = [
        Job(e, "4100", "nccl-preflight", "trainops", 1001, "llm", "gpu", tuple(f"east-{i:03d}" for i in range(1, 9)),
            after(A1_START, -1500), after(A1_START, -1320), after(A1_START, -948), "COMPLETED", "0:0", 30,
            [(".batch", "batch", "COMPLETED", "0:0"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "all_reduce_perf", "COMPLETED", "0:0")], "/home/trainops/preflight"),
        Job(e, LLAMA_JOBS[0], LLAMA, "trainops", 1001, "llm", "gpu", A1_HOSTS, after(a1.start, -79), a1.start, a1.end,
            "CANCELLED by 1001", "0:0", tl(a1.start),
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "torchrun", "CANCELLED", "0:15")], "/home/trainops/llama8b"),
        Job(e, "4104", "vlm-eval", "rkim", 1002, "vision", "gpu", tuple(f"east-{i:03d}" for i in range(9, 13)),
            after(A1_START, 540), after(A1_START, 600), after(A1_START, 5421), "COMPLETED", "0:0", 120,
            [(".batch", "batch", "COMPLETED", "0:0"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "python3", "COMPLETED", "0:0")], "/home/rkim/vlm"),
        Job(e, LLAMA_JOBS[1], LLAMA, "trainops", 1001, "llm", "gpu", A2_HOSTS, after(a2.start, -130), a2.start,
            a2.end, "FAILED", "1:0", tl(a2.start),
            [(".batch", "batch", "FAILED", "1:0"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "torchrun", "FAILED", "1:0")], "/home/trainops/llama8b"),
        Job(e, LLAMA_JOBS[2], LLAMA, "trainops", 1001, "llm", "gpu", A3_HOSTS, after(a3.start, -95), a3.start, a3.end,
            "TIMEOUT", "0:0", story.tl_min,
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0"),
             (".0", "torchrun", "CANCELLED", "0:15")], "/home/trainops/llama8b"),
        Job(w, DS_JOB, DS, "jchen", 1003, "research", "gpu", (DS_HOST,), after(DS_START, -118), DS_START,
            story.ds.end, "PREEMPTED", "0:15", 480,
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0")],
            "/home/jchen/ablations"),
        Job(w, BURNIN_JOB, "gpu-burnin", "acmeops", 900, "acme", "maint", (DS_HOST,), after(story.t["preempt"], -2),
            after(story.ds.end, 2), after(story.ds.end, 1802), "COMPLETED", "0:0", 60,
            [(".batch", "batch", "COMPLETED", "0:0"), (".extern", "extern", "COMPLETED", "0:0")], "/opt/acme/burnin"),
        Job(w, HF_JOB, HF, "mkaur", 1000, "research", "gpu", (HF_HOST,), after(HF_START, -73), HF_START, story.hf.end,
            "CANCELLED by 1000", "0:0", 360,
            [(".batch", "batch", "CANCELLED", "0:15"), (".extern", "extern", "COMPLETED", "0:0")],
            "/home/mkaur/hf-eval"),
    ]
    return jobs


CPUS_PER_NODE = CPUS  # the simulator's nodes: 2 x 112-core CPUs


def write_sacct(files: Files, jobs: list[Job]) -> None:
    """scheduler/sacct.txt: `sacct --parsable2`, the simulator's columns, jobs and their steps."""
    out = [SACCT_COLS]
    for j in sorted(jobs, key=lambda j: (j.cluster, int(j.job_id))):
        n = len(j.nodes)
        tres = f"billing={CPUS_PER_NODE * n},cpu={CPUS_PER_NODE * n},gres/gpu={8 * n},mem={2000 * n}G,node={n}"
        common = [iso_s(j.submit), iso_s(j.start), iso_s(j.end), elapsed((j.end - j.start).total_seconds())]
        out.append("|".join([j.cluster, j.job_id, j.name, j.user, j.partition, j.account, str(CPUS_PER_NODE * n),
                             j.state, j.exit_code, *common, str(n), hostlist(j.nodes), tres]))
        for suffix, name, state, code in j.steps:
            nn = 1 if suffix == ".batch" else n
            start = after(j.start, 2) if suffix == ".0" else j.start
            out.append("|".join([j.cluster, j.job_id + suffix, name, "", "", j.account, str(CPUS_PER_NODE * nn), state,
                                 code, iso_s(j.start), iso_s(start), iso_s(j.end),
                                 elapsed((j.end - start).total_seconds()), str(nn),
                                 j.nodes[0] if nn == 1 else hostlist(j.nodes),
                                 f"cpu={CPUS_PER_NODE * nn},gres/gpu={8 * nn},mem={2000 * nn}G,node={nn}"]))
    files.text("scheduler/sacct.txt", out)


def write_jobcomp(files: Files, jobs: list[Job]) -> None:
    """scheduler/<cluster>/jobcomp.txt: one jobcomp/filetxt record per finished job."""
    for cluster in ("acme-east", "acme-west"):
        out = []
        for j in sorted((j for j in jobs if j.cluster == cluster), key=lambda j: j.end):
            n = len(j.nodes)
            state = j.state.split(" ")[0]
            tres = f"cpu={CPUS_PER_NODE * n},mem={2000 * n}G,node={n},billing={CPUS_PER_NODE * n},gres/gpu={8 * n}"
            out.append(f"JobId={j.job_id} UserId={j.user}({j.uid}) GroupId={j.user}({j.uid}) Name={j.name} "
                       f"JobState={state} Partition={j.partition} TimeLimit={j.time_limit_min} StartTime="
                       f"{iso_s(j.start)} EndTime={iso_s(j.end)} NodeList={hostlist(j.nodes)} NodeCnt={n} "
                       f"ProcCnt={CPUS_PER_NODE * n} WorkDir={j.workdir} ReservationName= Tres={tres} "
                       f"Account={j.account} QOS=normal WcKey= Cluster={cluster} SubmitTime={iso_s(j.submit)} "
                       f"EligibleTime={iso_s(j.submit)} DerivedExitCode=0:0 ExitCode={j.exit_code} ")
        files.text(f"scheduler/{cluster}/jobcomp.txt", out)


def write_slurmctld(files: Files, story: Story, jobs: list[Job]) -> None:
    """scheduler/<cluster>/slurmctld.log: submissions, allocations, kills, drains, preemption."""
    r = rng("slurmctld")
    by_id = {j.job_id: j for j in jobs}
    east: list[tuple[dt.datetime, str]] = []
    west: list[tuple[dt.datetime, str]] = []

    def lifecycle(log: list, j: Job) -> None:
        prio, usec = r.randint(9000, 11000), r.randint(250, 900)
        log.append((after(j.submit, r.uniform(0.01, 0.9)),
                    f"_slurm_rpc_submit_batch_job: JobId={j.job_id} InitPrio={prio} usec={usec}"))
        log.append((after(j.start, r.uniform(0.001, 0.05)), f"sched: Allocate JobId={j.job_id} NodeList="
                    f"{hostlist(j.nodes)} #CPUs={CPUS_PER_NODE * len(j.nodes)} Partition={j.partition}"))

    resv = story.t["reservation"]
    east.append((after(A1_START, -7200), f"_slurm_rpc_resv_create complete for {RESERVATION} usec=1872"))
    east.append((after(A1_START, -7199), f"sched: Created reservation={RESERVATION} users=acmeops "
                                         f"nodes=east-[001-016] cores=3584 licenses=(null) tres=cpu=3584 "
                                         f"watts=4294967294 start={iso_s(resv)} end={iso_s(after(resv, 4 * 3600))} "
                                         "MaxStartDelay="))
    for jid in ("4100", "4104"):
        j = by_id[jid]
        lifecycle(east, j)
        east.append((j.end, f"_job_complete: JobId={jid} WEXITSTATUS 0"))
        east.append((after(j.end, 0.001), f"_job_complete: JobId={jid} done"))
    a1, a2, a3 = story.llama
    j = by_id[LLAMA_JOBS[0]]
    lifecycle(east, j)
    east.append((a1.end, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={j.job_id} uid 1001"))
    east.append((after(a1.end, 0.001), f"job_signal: 9 of running JobId={j.job_id} successful 0x8004"))
    kt = after(a1.end, 121.4)  # UnkillableStepTimeout=120: the process on the lost GPU stays in D state
    east.append((kt, f"error: slurmd error running JobId={j.job_id} on node(s)={XID_HOST}: Kill task failed"))
    east.append((after(kt, 0.0004), f"drain_nodes: node {XID_HOST} state set to DRAIN"))
    east.append((after(kt, 1.2), f"cleanup_completing: JobId={j.job_id} completion process took 122 seconds"))
    adm = after(a1.end, 402.7)
    east.append((adm, f"update_node: node {XID_HOST} reason set to: Xid 79 GPU 0000:{XID_BUS}:00.0 fell off the bus "
                      "- RMA ACME-77812"))
    east.append((after(adm, 0.0003), f"update_node: node {XID_HOST} state set to DOWN"))
    j = by_id[LLAMA_JOBS[1]]
    lifecycle(east, j)
    east.append((a2.end, f"_job_complete: JobId={j.job_id} WEXITSTATUS 1"))
    east.append((after(a2.end, 0.001), f"_job_complete: JobId={j.job_id} done"))
    adm = after(a2.end, 233.1)
    east.append((adm, f"update_node: node {IB_HOST} reason set to: {IB_HCA} link flapping, cable swap ACME-77840"))
    east.append((after(adm, 0.0003), f"update_node: node {IB_HOST} state set to DRAIN"))
    j = by_id[LLAMA_JOBS[2]]
    lifecycle(east, j)
    east.append((a3.end, f"Time limit exhausted for JobId={j.job_id}"))
    east.append((after(a3.end, 2.6), f"_job_complete: JobId={j.job_id} WTERMSIG 15"))
    east.append((after(a3.end, 2.6011), f"_job_complete: JobId={j.job_id} done"))
    for k in range(0, 6 * 3600, 1800):  # background chatter
        began = f"{after(A1_START, k - 3604):%H:%M:%S}.{r.randint(100, 999)}"
        east.append((after(A1_START, k - 3600 + 7.3), "Warning: Note very large processing time from "
                                                      f"_slurm_rpc_dump_jobs: usec={r.randint(3000000, 4200000)} "
                                                      f"began={began}"))

    j = by_id[DS_JOB]
    lifecycle(west, j)
    p = story.t["preempt"]
    west.append((after(p, -2), f"_slurm_rpc_submit_batch_job: JobId={BURNIN_JOB} InitPrio=4294901759 usec=311"))
    west.append((p, f"preempted JobId={DS_JOB} has been killed to reclaim resources for JobId={BURNIN_JOB}"))
    west.append((j.end, f"_job_complete: JobId={DS_JOB} WTERMSIG 15"))
    west.append((after(j.end, 0.001), f"_job_complete: JobId={DS_JOB} done"))
    b = by_id[BURNIN_JOB]
    west.append((b.start, f"sched: Allocate JobId={BURNIN_JOB} NodeList={DS_HOST} #CPUs={CPUS_PER_NODE} "
                          f"Partition={b.partition}"))
    west.append((b.end, f"_job_complete: JobId={BURNIN_JOB} WEXITSTATUS 0"))
    west.append((after(b.end, 0.001), f"_job_complete: JobId={BURNIN_JOB} done"))
    j = by_id[HF_JOB]
    lifecycle(west, j)
    west.append((j.end, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={HF_JOB} uid 1000"))
    west.append((after(j.end, 0.4), f"_job_complete: JobId={HF_JOB} WTERMSIG 15"))
    west.append((after(j.end, 0.401), f"_job_complete: JobId={HF_JOB} done"))
    for name, log in (("acme-east", east), ("acme-west", west)):
        # events at a whole second (job ends, kills) are logged a few ms into it
        log = [(after(t, r.uniform(0.002, 0.03)) if t.microsecond == 0 else t, m) for t, m in log]
        files.text(f"scheduler/{name}/slurmctld.log", [f"{ctld(t)} {m}" for t, m in sorted(log, key=lambda x: x[0])])
