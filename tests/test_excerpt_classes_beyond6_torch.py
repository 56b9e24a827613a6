"""The classes of defect the sixth round of real excerpts showed in PyTorch and trainer output
(tests/real_excerpts/pytorch_beyond6.toml, training_beyond6.toml), each stated on shapes of its own: torchrun's
summary cell `Signal N (SIGx) received by PID` outside its field layout, a file that begins with an exception (a
quoted traceback end), torchrun's `[rankN]: ` prefix as the only sign of torch output, a full disk or quota worded
anywhere on a line, an exception whose message says the loss is not finite, and Lightning's placeholder `loss=nan`
in a progress bar beside a finite train loss."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import events as _events
from excerpt_events import modes as _modes

from clusterlab.collectors import torch_dist


@pytest.mark.parametrize(("cell", "mode"), [
    ("traceback : Signal 9 (SIGKILL) received by PID 7001", "host_oom"),
    ("Signal 6 (SIGABRT) received by PID 7001", "nccl_timeout"),
    ("traceback: signal 7 (SIGBUS) received by PID 7001", "host_oom"),
])
def test_a_summary_cell_outside_its_field_layout_is_the_childs_exit(tmp_path: Path, cell: str, mode: str) -> None:
    # a ChildFailedError table whose cells lost their layout in a paste: no `  exitcode  : ` field line is left
    text = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nscripts/pretrain.py FAILED\n"
            "Root Cause (first observed failure) :\n[0]:\ntime\nhost\n2025-05-02 11:20:13\nnode-b07\n"
            f"rank3 (local rank: 3)exitcode: -1 (pid: 7001)error file: <N/A>\n{cell}\n")
    assert _events(tmp_path, text, "job.out") == [("launcher_exit", mode)]


def test_a_launchers_own_report_quoting_the_cell_is_not_read_as_the_cell(tmp_path: Path) -> None:
    line = ("[2025-03-17 16:12:33,101] [ERROR] [agent@n3] Some rank(s) exited: {3: ProcessFailure(local_rank=3, "
            "pid=48135, exitcode=-9, message='Signal 9 (SIGKILL) received by PID 48135')}\n")
    assert torch_dist.sniff(b"torch.distributed " + line.encode(), "x")
    assert ("launcher_exit", "host_oom") not in _events(tmp_path, "torch.distributed.run: starting\n" + line)


@pytest.mark.parametrize(("text", "mode"), [
    ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
     "(prepare_for_backward at /pytorch/torch/csrc/distributed/c10d/reducer.cpp:408)\n"
     "frame #0: c10::Error::Error(c10::SourceLocation, std::string const&) + 0x45 (0x7f in libc10.so)\n",
     "user_code_error"),
    ("OSError: [Errno 122] Disk quota exceeded: '/home/u/ckpt/step_900.pt'\n", "filesystem_io"),
    ("[rank3]: KeyError: 'pixel_values'\n", "user_code_error"),
])
def test_a_file_that_begins_with_an_exception_is_a_quoted_traceback_end(tmp_path: Path, text: str,
                                                                        mode: str) -> None:
    assert _modes(tmp_path, text, "error.txt") == {mode}


def test_the_same_words_after_other_lines_stay_a_log_line(tmp_path: Path) -> None:
    text = "epoch 3 step 120 torch.distributed barrier done\nValueError: just a message a callback printed\n"
    assert _modes(tmp_path, text) == set()


def test_torchruns_rank_prefix_alone_marks_torch_output() -> None:
    assert torch_dist.sniff(b"[rank12]: AssertionError: micro batch size must be positive\n", "e.txt")
    assert not torch_dist.sniff(b"[rank: 0] Seed set to 42\n", "e.txt")  # Lightning's own, a different tool


@pytest.mark.parametrize(("text", "mode"), [
    # a workflow tool's prefix before every line: the exception no longer begins its line
    ("2024-06-01 10:00:00.001 [88/train/9 (pid 41)] OSError: [Errno 28] No space left on device\n", "filesystem_io"),
    # a Rust writer's io::Error, and its Display form
    ("serde_json::Error: Io(Os { code: 28, kind: StorageFull, message: \"No space left on device\" })\n",
     "filesystem_io"),
    ("Error while serializing: I/O error: Disk quota exceeded (os error 122)\n", "filesystem_io"),
    # /dev/shm full under a DataLoader stays host memory
    ("RuntimeError: unable to write to file </torch_511_2205_3>: No space left on device (28)\n", "host_oom"),
])
def test_a_full_disk_or_quota_is_storage_wherever_the_line_words_it(tmp_path: Path, text: str, mode: str) -> None:
    assert _modes(tmp_path, "Traceback (most recent call last):\n" + text, "train.log") == {mode}


@pytest.mark.parametrize("line", [
    "ValueError: loss is nan",
    "[rank1]: RuntimeError: Training loss became NaN at step 4410, stopping",
    "FloatingPointError: total loss = inf",
])
def test_an_exception_saying_the_loss_is_not_finite_is_divergence(tmp_path: Path, line: str) -> None:
    text = f"Traceback (most recent call last):\n  File \"train.py\", line 9, in step\n{line}\n"
    assert "loss_divergence" in _modes(tmp_path, text)
    assert "user_code_error" not in _modes(tmp_path, text)


def test_an_exception_about_nan_handling_is_not_divergence(tmp_path: Path) -> None:
    text = "Traceback (most recent call last):\nTypeError: loss_fn() got an unexpected keyword 'nan_policy'\n"
    assert _modes(tmp_path, text) == {"user_code_error"}


_BAR = "Epoch 2:  41%|####      | 820/2000 [10:02<14:26,  1.36it/s, loss={loss}, v_num=3{extra}]\n"


@pytest.mark.parametrize(("loss", "extra", "diverged"), [
    ("nan", ", reduced_train_loss=2.310, global_step=819.0", False),  # Lightning's placeholder beside NeMo's own
    ("nan", ", train_loss_step=0.412", False),
    ("nan", ", reduced_train_loss=nan, global_step=819.0", True),  # the logged train loss is NaN too
    ("nan", ", val_loss=0.52", True),  # no train loss of the module's own: the bar's is the only one
    ("nan", "", True),
])
def test_a_bars_placeholder_loss_beside_a_finite_train_loss_is_no_divergence(tmp_path: Path, loss: str, extra: str,
                                                                            diverged: bool) -> None:
    assert ("loss_divergence" in _modes(tmp_path, _BAR.format(loss=loss, extra=extra) * 3, "fit.log")) == diverged


_HYDRA = ("===================================================================================\n"
          "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 88 RUNNING AT gpu-n4\n"
          "=   EXIT CODE: {code}\n"
          "===================================================================================\n"
          "{lead}APPLICATION TERMINATED WITH THE EXIT STRING: {words} (signal {sig})\n")


@pytest.mark.parametrize(("lead", "words", "sig", "mode"), [
    ("YOUR ", "Bus error", 7, "host_oom"),  # MPICH's Hydra: /dev/shm too small in a container
    ("", "Killed", 9, "host_oom"),  # Intel MPI's older wording
    ("YOUR ", "Segmentation fault: 11", 11, "user_code_error"),  # strsignal's words on macOS
    ("YOUR ", "Terminated", 15, "unknown"),  # stopped from outside: the exit alone names no cause
])
def test_hydras_report_of_a_signalled_rank_is_the_ranks_exit(tmp_path: Path, lead: str, words: str, sig: int,
                                                             mode: str) -> None:
    text = _HYDRA.format(code=128 + sig, lead=lead, words=words, sig=sig)
    assert _events(tmp_path, text, "mpirun.out") == [("launcher_exit", mode)]


@pytest.mark.parametrize("line", [
    "torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 1 on device 1.",
    "2024-05-01T08:00:00.001+02:00                torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 0 "
    "on device 0.",
    "[rank2]: torch.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 2.",
])
def test_torchs_oom_class_without_its_message_is_a_device_oom(tmp_path: Path, line: str) -> None:
    # DataParallel re-raises a replica's error as `Caught <class> in replica N on device N.`: no 'CUDA out of memory'
    assert _modes(tmp_path, f"Traceback (most recent call last):\n{line}\n", "train.log") == {"cuda_oom"}
