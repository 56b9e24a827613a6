"""ds1b-ablation (DeepSpeed, preempted) and hf-eval-sweep (HuggingFace Trainer, cancelled by its owner):
one-node jobs on acme-west."""

from __future__ import annotations

import datetime as dt
import math

from clusterlab.simulator import textlog
from clusterlab.simulator.demo.files import Files
from clusterlab.simulator.demo.story import (
    DS,
    DS_HOST,
    DS_JOB,
    DS_PRINT,
    HF,
    HF_HOST,
    HF_JOB,
    HF_LOG_EVERY,
    HF_TOTAL,
    Story,
    rng,
)
from clusterlab.simulator.stamps import (
    after,
    glog,
    iso_s,
    pylog,
)


def dslog(t: dt.datetime, where: str, msg: str, level: str = "INFO") -> str:
    """DeepSpeed's logger line: `[time] [LEVEL] [file:line:func] msg`."""
    return f"[{pylog(t)}] [{level}] [{where}] {msg}"


def write_ds(files: Files, story: Story) -> None:
    """ds1b-ablation: DeepSpeed's launcher, steps_per_print lines, saves, then Slurm's preemption."""
    att, r = story.ds, rng("ds-log")
    s = att.start
    out = [dslog(after(s, 3.1), "real_accelerator.py:219:get_accelerator",
                 "Setting ds_accelerator to cuda (auto detect)"),
           dslog(after(s, 5.2), "runner.py:215:fetch_hostfile", "Unable to find hostfile, will proceed with training "
                                                              "with local resources only.", "WARNING"),
           dslog(after(s, 5.3), "runner.py:607:main", "cmd = /usr/bin/python3 -u -m deepspeed.launcher.launch "
                                                   "--world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgN119 "
                                                   "--master_addr=127.0.0.1 --master_port=29500 "
                                                   "--enable_each_rank_log=None train_ds1b.py --deepspeed "
                                                   "ds_config_zero2.json --ablation no-qk-norm"),
           dslog(after(s, 7.0), "launch.py:146:main", "WORLD INFO DICT: {'localhost': [0, 1, 2, 3, 4, 5, 6, 7]}"),
           dslog(after(s, 7.0), "launch.py:152:main", "nnodes=1, num_local_procs=8, node_rank=0")]
    pids = [r.randint(20000, 60000) + i for i in range(8)]
    out += [dslog(after(s, 7.1), "launch.py:256:main", f"process {pid} spawned with command: ['/usr/bin/python3', "
                                                       "'-u', "
                                                    f"'train_ds1b.py', '--local_rank={i}', '--deepspeed', "
                                                    "'ds_config_zero2.json', '--ablation', 'no-qk-norm']")
            for i, pid in enumerate(pids)]
    out += [dslog(after(s, 19.4), "comm.py:683:init_distributed", "Initializing TorchBackend in DeepSpeed with backend "
                                                               "nccl"),
            dslog(after(s, 24.8), "logging.py:128:log_dist", "[Rank 0] DeepSpeed info: version=0.15.4, "
                                                             "git-hash=unknown, "
                                                          "git-branch=unknown"),
            dslog(after(s, 31.0), "logging.py:128:log_dist", "[Rank 0] Creating BF16 optimizer"),
            dslog(after(s, 38.2), "config.py:1003:print", "  zero_optimization ............ {'stage': 2, "
                                                       "'contiguous_gradients': True, 'overlap_comm': True}"),
            dslog(after(s, 38.2), "config.py:1003:print", "  train_batch_size ............. 64"),
            dslog(after(s, 38.2), "config.py:1003:print", f"  steps_per_print .............. {DS_PRINT}")]
    saves = {sv.step: sv for sv in att.saves}
    ckpt = "/lustre-west/ckpt/ds1b-ablation"
    for st in att.steps:
        if st.step % DS_PRINT == 0:
            lr = 3e-4 * min(1, st.step / 200) * (0.5 + 0.5 * math.cos(math.pi * st.step / 20000))
            out.append(dslog(st.end, "logging.py:128:log_dist", f"[Rank 0] step={st.step}, skipped=0, lr=[{lr:.8g}], "
                                                             "mom=[(0.9, 0.95)]"))
            sps = 64 / st.step_s
            out.append(dslog(after(st.end, 0.001), "timer.py:264:stop", f"epoch=0/micro_step={st.step}/global_step="
                                                                     f"{st.step}, RunningAvgSamplesPerSec="
                                                                     f"{sps * 0.995:.4f}, CurrSamplesPerSec={sps:.4f}, "
                                                                     "MemAllocated=4.81GB, MaxMemAllocated=19.77GB"))
        if st.step in saves:
            sv, tag = saves[st.step], f"global_step{st.step}"
            out += [dslog(sv.start, "logging.py:128:log_dist",
                          f"[Rank 0] [Torch] Checkpoint {tag} is about to be saved!"),
                    dslog(after(sv.start, 0.01), "logging.py:128:log_dist",
                       f"[Rank 0] Saving model checkpoint: {ckpt}/{tag}/mp_rank_00_model_states.pt"),
                    dslog(after(sv.start, 0.01), "torch_checkpoint_engine.py:21:save",
                       f"[Torch] Saving {ckpt}/{tag}/mp_rank_00_model_states.pt..."),
                    dslog(after(sv.start, 2.9), "torch_checkpoint_engine.py:23:save",
                       f"[Torch] Saved {ckpt}/{tag}/mp_rank_00_model_states.pt."),
                    dslog(after(sv.end, -0.02), "engine.py:3575:_save_zero_checkpoint",
                       f"zero checkpoint saved {ckpt}/{tag}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"),
                    dslog(sv.end, "torch_checkpoint_engine.py:33:commit", f"[Torch] Checkpoint {tag} is ready now!")]
    p = story.t["preempt"]
    out.append(f"slurmstepd: error: *** JOB {DS_JOB} ON {DS_HOST} CANCELLED AT {iso_s(p)} DUE TO PREEMPTION ***")
    out += [dslog(after(p, 0.41 + 0.001 * i), "launch.py:319:sigkill_handler", f"Killing subprocess {pid}")
            for i, pid in enumerate(pids)]
    last = dslog(after(p, 1.2), "launch.py:325:sigkill_handler", "Main process received SIGTERM, exiting")
    text = "\n".join(out) + "\n" + last
    # NOTE: the node killed the launcher mid-write (SIGKILL at the end of GraceTime): truncated last line
    files.text(f"runs/{DS}/attempt-1/train.log", text[: len(text) - 19])
    files.text(f"runs/{DS}/run.toml", [
        'cluster = "acme-west"',
        "gpus = 8",
        "tokens_per_step = 131072  # global batch 64 x seq_len 2048",
        "params = 1209532416",
        "layers = 24",
        "hidden = 2048",
        "seq_len = 2048",
        'checkpoint_dir = "/lustre-west/ckpt/ds1b-ablation"',
        'launcher = "slurm"',
        'launch_command = "sbatch --job-name=ds1b-ablation --nodes=1 --gpus-per-node=8 --exclusive --time=08:00:00 '
        '--partition=gpu --account=research run_ds1b.sbatch"',
    ])


def write_hf(files: Files, story: Story) -> None:
    """hf-eval-sweep: the Trainer's banner, tqdm bar, loss dicts and evaluations, then a user's scancel."""
    att, r = story.hf, rng("hf-log")
    s = att.start
    hf_py = "/home/mkaur/.venv/lib/python3.11/site-packages"
    out = ["+ torchrun --nproc-per-node 8 run_clm_sweep.py --model_name_or_path /data/models/phi-2.7b "
           "--do_train --do_eval --eval_strategy steps --eval_steps 500 --logging_steps 25 --bf16 "
           "--output_dir /home/mkaur/hf-eval/out"]
    out += textlog.omp_banner(after(s, 6), 48211).split("\n")
    out.append(f"{hf_py}/transformers/training_args.py:1575: FutureWarning: `evaluation_strategy` is deprecated and "
               "will be removed in version 4.46 of Transformers. Use `eval_strategy` instead")
    t0 = after(att.train_start, -0.863)
    for ln, text in ((2314, "***** Running training *****"), (2315, "  Num examples = 120,000"),
                     (2316, "  Num Epochs = 1"), (2317, "  Instantaneous batch size per device = 4"),
                     (2320, "  Total train batch size (w. parallel, distributed & accumulation) = 32"),
                     (2321, "  Gradient Accumulation steps = 1"), (2322, f"  Total optimization steps = {HF_TOTAL:,}"),
                     (2323, "  Number of trainable parameters = 2,779,683,840")):
        out.append(f"[INFO|trainer.py:{ln}] {pylog(t0)} >> {text}")
    bar: list[str] = []

    def tqdm(step: int, t: dt.datetime) -> str:
        el = (t - att.train_start).total_seconds()
        rate = el / max(step, 1)
        left = rate * (HF_TOTAL - step)
        pct = 100 * step // HF_TOTAL
        filled = "█" * (pct // 10)
        return (f"{pct:3d}%|{filled:<10}| {step}/{HF_TOTAL} [{int(el) // 60:02d}:{int(el) % 60:02d}<"
                f"{int(left) // 3600}:{int(left) % 3600 // 60:02d}:{int(left) % 60:02d}, {rate:5.2f}s/it]")

    bar.append(f"  0%|          | 0/{HF_TOTAL} [00:00<?, ?it/s]")
    for st in att.steps:
        bar.append(tqdm(st.step, st.end))
        if st.step % HF_LOG_EVERY == 0:
            out.append("\r".join(bar))
            bar = [""]
            lr = 2e-5 * (1 - st.step / HF_TOTAL)
            out.append(f"{{'loss': {1.62 + 0.6 * math.exp(-st.step / 300) + r.gauss(0, 0.02):.4f}, 'grad_norm': "
                       f"{0.9 + abs(r.gauss(0, 0.2)):.4f}, 'learning_rate': {lr!r}, 'epoch': "
                       f"{round(st.step / HF_TOTAL, 4)}}}")
        if st.step % 500 == 0:
            out.append("\r".join(bar))
            bar = [""]
            out.append(f"[INFO|trainer.py:4117] {pylog(st.end)} >> \n***** Running Evaluation *****")
            out.append(f"[INFO|trainer.py:4119] {pylog(st.end)} >>   Num examples = 4000")
            out.append(f"{{'eval_loss': {1.71 + 0.3 * math.exp(-st.step / 400):.4f}, 'eval_runtime': 41.27, "
                       "'eval_samples_per_second': 96.923, 'eval_steps_per_second': 3.029, 'epoch': "
                       f"{round(st.step / HF_TOTAL, 4)}}}")
            out.append(f"[INFO|trainer.py:3801] {pylog(after(st.end, 41.5))} >> Saving model checkpoint to "
                       f"/home/mkaur/hf-eval/out/checkpoint-{st.step}")
    out.append("\r".join(bar))
    c = story.t["hf_cancel"]
    out.append(f"slurmstepd: error: *** JOB {HF_JOB} ON {HF_HOST} CANCELLED AT {iso_s(c)} ***")
    out.append(f"{glog(after(c, 0.03), 'W')} 48211 torch/distributed/elastic/agent/server/api.py:704] Received "
               "Signals.SIGTERM death signal, shutting down workers")
    files.text(f"runs/{HF}/attempt-1/train.log", out)
    files.text(f"runs/{HF}/run.toml", [
        'cluster = "acme-west"',
        "gpus = 8",
        "tokens_per_step = 65536  # 32 sequences x 2048",
        "flops_per_token = 1.7e10",
        'launcher = "slurm"',
        'launch_command = "sbatch --job-name=hf-eval-sweep --nodes=1 --gpus-per-node=8 --time=06:00:00 '
        '--partition=gpu --account=research sweep.sbatch"',
    ])
