"""The classes of defect the eleventh round of real excerpts showed (tests/real_excerpts/mixed_beyond11.toml), each
stated on shapes of its own: a Python traceback pasted from its middle (its header cut) is read behind whatever prefix
a launcher put before each relayed line (a Ray actor's `(Name pid=N, ip=...) `, torchrun's tee `[default3]:`, or `[3]:`
where the role name is empty, srun --label's `3: `), its frames read at their own indentation where the prefix ate one
of its spaces; a shell command failing on its filesystem in perror's words is the storage failing the job for ESTALE
as for EIO, and for ENOTCONN / ESHUTDOWN on a path (a dead FUSE daemon, an evicted Lustre client), not on a socket."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import modes as _modes

_FS_TAIL = [
    '  File "/srv/app/ckpt.py", line 88, in save',
    "    torch.save(state, path)",
    '  File "/usr/lib/python3.11/site-packages/torch/serialization.py", line 652, in save',
    "    with _open_zipfile_writer(f) as opened_zipfile:",
    "RuntimeError: [enforce fail at inline_container.cc:588] . unexpected pos 81920 vs 81866",
]
_USER_TAIL = [
    '  File "/srv/app/train.py", line 140, in main',
    "    cfg = load_config(args.config)",
    '  File "/srv/app/config.py", line 31, in load_config',
    '    return settings["optimizer"]["betas"]',
    "KeyError: 'betas'",
]


def _prefixed(prefix: str, tail: list[str], code_first: bool = False) -> str:
    lines = ([tail[1]] if code_first else []) + tail
    return "".join(f"{prefix}{line}\n" for line in lines)


@pytest.mark.parametrize(
    "prefix",
    [
        "(TrainWorker pid=40112) ",  # a Ray actor, no ip
        "(PPOActor pid=40112, ip=10.2.7.31) ",  # a Ray actor on another node
        "(worker3, rank=3, pid=5120, ip=10.2.7.33) ",  # SkyPilot's node prefix
    ],
)
@pytest.mark.parametrize("code_first", [False, True])
def test_a_headless_traceback_behind_a_ray_actor_prefix_is_read(tmp_path: Path, prefix: str, code_first: bool) -> None:
    assert _modes(tmp_path, _prefixed(prefix, _FS_TAIL, code_first), "actor.log") == {"filesystem_io"}


@pytest.mark.parametrize("prefix", ["[2]:", "[default2]:", "[rank2]: ", "2: "])
def test_a_headless_traceback_behind_a_rank_prefix_is_read(tmp_path: Path, prefix: str) -> None:
    # torchrun's tee writes its header and the line with no space between (`[default2]:  File ...`): the frame keeps
    # one of its two spaces; an empty role name leaves the local rank alone in the brackets (`[2]:`)
    assert _modes(tmp_path, _prefixed(prefix, _USER_TAIL), "ranks.log") == {"user_code_error"}
    assert _modes(tmp_path, _prefixed(prefix, _FS_TAIL), "ranks.log") == {"filesystem_io"}


@pytest.mark.parametrize(
    "text",
    [
        "-bash: cd: /home/ops: Stale file handle\n",
        "ls: cannot access '/lustre/proj/ckpt': Stale file handle\n",
        "cp: error reading '/nfs/datasets/shard-00017.tar': Stale file handle\n",
        "ls: cannot access '/mnt/gcs/runs': Transport endpoint is not connected\n",
        "du: cannot access '/lustre/scratch/ckpt/step_900': Cannot send after transport endpoint shutdown\n",
        "/var/spool/slurmd/job9912/slurm_script: line 40: /bin/mv: Input/output error\n",
    ],
)
def test_a_shell_command_failing_on_its_filesystem_is_filesystem_io(tmp_path: Path, text: str) -> None:
    session = "Last login: Mon Mar  2 08:01:12 2026 from 10.9.0.4\n" + text
    assert _modes(tmp_path, session, "session.txt") == {"filesystem_io"}


@pytest.mark.parametrize(
    "text",
    [
        "ssh_exchange_identification: read: Transport endpoint is not connected\n",
        "rsync: connection unexpectedly closed: Transport endpoint is not connected\n",
    ],
)
def test_enotconn_on_a_socket_is_not_the_filesystem(tmp_path: Path, text: str) -> None:
    assert _modes(tmp_path, "Last login: Mon Mar  2 08:01:12 2026 from 10.9.0.4\n" + text, "session.txt") == set()
