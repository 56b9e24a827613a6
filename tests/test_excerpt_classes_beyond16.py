"""The classes of defect the sixteenth round of real excerpts showed (tests/real_excerpts/mixed_beyond16.toml), each
stated on shapes of its own: the Hugging Face Hub failing a dataset's stream on its side (a 429, a 5xx, a read
timeout) is the data's storage failing the job, a 404 of a name the user mistyped is not; EREMOTEIO on a path is the
storage; a traceback pasted from its middle behind srun's `--label` and torchrun's `[rankN]:` is still read."""

from __future__ import annotations

from pathlib import Path

import pytest
from excerpt_events import modes as _modes

_TB = ("Traceback (most recent call last):\n"
       '  File "/opt/venv/lib/python3.11/site-packages/datasets/load.py", line 1824, in dataset_module_factory\n'
       "    raise e\n")


@pytest.mark.parametrize("last", [
    "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
    "https://huggingface.co/api/datasets/acme/corpus-v2/paths-info/0a1b2c3d",
    "huggingface_hub.utils._errors.HfHubHTTPError: 503 Server Error: Service Unavailable for url: "
    "https://huggingface.co/datasets/acme/corpus-v2/resolve/0a1b2c3d/train/part-00017.parquet",
    "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. "
    "(read timeout=10)",
])
def test_the_hub_failing_a_datasets_stream_on_its_side_is_the_storage(tmp_path: Path, last: str) -> None:
    assert _modes(tmp_path, _TB + last + "\n", "train.log") == {"filesystem_io"}


def test_a_name_the_hub_does_not_know_is_the_users(tmp_path: Path) -> None:
    last = ("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: "
            "https://huggingface.co/api/datasets/acme/corpus-v3")
    assert _modes(tmp_path, _TB + last + "\n", "train.log") == {"user_code_error"}


def test_eremoteio_on_a_path_is_the_storage(tmp_path: Path) -> None:
    last = "OSError: [Errno 121] Remote I/O error: '/mnt/nas7/shards/shard-000912.tar'"
    assert _modes(tmp_path, _TB + last + "\n", "train.log") == {"filesystem_io"}


def test_a_traceback_pasted_from_its_middle_behind_two_prefixes_is_read(tmp_path: Path) -> None:
    text = (' 7: [rank57]:   File "/opt/venv/lib/python3.11/site-packages/huggingface_hub/hf_api.py", line 2363, in '
            "dataset_info\n"
            " 7: [rank57]:     r = get_session().get(path, headers=headers, timeout=timeout, params=params)\n"
            " 7: [rank57]: urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='huggingface.co', port=443): "
            "Read timed out. (read timeout=10)\n")
    assert _modes(tmp_path, text, "slurm-771.out") == {"filesystem_io"}
