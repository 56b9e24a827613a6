"""A class of defect the seventh round of real excerpts showed in PyTorch output (tests/real_excerpts/
pytorch_beyond7.toml): a traceback pasted from its middle. The header (`Traceback (most recent call last):`) and the
first frames were cut; what is left begins with a frame line (or the code line under one) and ends with the
exception. Stated on shapes of its own: other exceptions, a rank prefix, a chained cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import modes as _modes

_FRAMES = ('  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 651, in save\n'
           "    with _open_zipfile_writer(f) as opened_zipfile:\n"
           '  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 525, in __exit__\n'
           "    self.file_like.write_end_of_file()\n")


@pytest.mark.parametrize(("text", "mode"), [
    (_FRAMES + "RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 3319808 vs 3319696\n",
     "filesystem_io"),
    # cut at the code line under a frame
    ("    self.file_like.write_end_of_file()\n" + _FRAMES + "OSError: [Errno 5] Input/output error\n",
     "filesystem_io"),
    ('  File "/work/train.py", line 88, in collate\n    batch["labels"] = torch.stack(labels)\n'
     "RuntimeError: stack expects each tensor to be equal size, but got [512] at entry 0 and [498] at entry 3\n",
     "user_code_error"),
    ('[rank5]:   File "/work/train.py", line 212, in <module>\n[rank5]:     main()\n'
     "[rank5]: torch.distributed.DistBackendError: [5] is setting up NCCL communicator and retrieving ncclUniqueId "
     "from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms\n",
     "nccl_timeout"),
])
def test_a_traceback_pasted_from_its_middle_is_read(tmp_path: Path, text: str, mode: str) -> None:
    assert mode in _modes(tmp_path, text, "error.txt")


def test_frames_after_other_lines_open_no_traceback(tmp_path: Path) -> None:
    # an exception with frames, but after ordinary log lines and no header: a log line that quotes one, as before
    text = ("epoch 3 step 120 torch.distributed barrier done\nsaving shard 2 of 8\nsaving shard 3 of 8\n"
            '  File "/work/train.py", line 88, in collate\nValueError: just a message a callback printed\n')
    assert _modes(tmp_path, text) == set()


def test_a_whole_traceback_still_pairs_with_its_header(tmp_path: Path) -> None:
    text = ("step 10 loss 2.31\nTraceback (most recent call last):\n" + _FRAMES
            + "OSError: [Errno 28] No space left on device\n")
    assert _modes(tmp_path, text) == {"filesystem_io"}
