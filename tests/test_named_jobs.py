"""The scheduler jobs an attempt's files name (`store.NAMED_JOBS`): sbatch's default `slurm-J.out`, a team's own
`#SBATCH --output=%x-%j.out` and a folder kept per job (`job-J/`); a number in any other name is no job."""

from __future__ import annotations

from clusterlab import Lab, store


def test_job_ids_in_output_names_and_job_folders() -> None:
    paths = ["runs/r/attempt-1/slurm-71400.out", "runs/r/attempt-2/pretrain-71401.out",
             "runs/r/job-71402/hyperpod.out.gz", "runs/r/attempt-4/steps/rank-00017.jsonl",
             "runs/r/attempt-5/ckpt-2000/log.txt"]
    with Lab(":memory:") as lab:
        for i, path in enumerate(paths):
            lab.con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (?, ?, 'r', ?)",
                            [i, path, i + 1])
            lab.con.execute("INSERT INTO events (file_id, run, attempt, line, kind) VALUES (?, 'r', ?, 1, 'x')",
                            [i, i + 1])
        got = lab.con.execute(f"WITH {store.NAMED_JOBS} SELECT attempt, job_id FROM named ORDER BY 1").fetchall()
    assert got == [(1, "71400"), (2, "71401"), (3, "71402")]
