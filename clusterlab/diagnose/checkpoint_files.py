"""Which checkpoint is really there: step directories on disk, checked against what the logs say was saved.

A checkpoint is *verified* when its directory exists and its manifest loads and accounts for every
byte it promises: for torch.distributed.checkpoint the `.metadata` file (written last, so its absence
means the save never finished) and every storage file it names, at least as long as the data it
places there; for safetensors the header and the file length; for torch.save files the zip central
directory. The `.metadata` pickle is read with an unpickler that builds inert stand-ins instead of
importing anything, so a hostile file cannot run code and torch is not needed.
"""

from __future__ import annotations

import json
import pickle
import re
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

# torchtitan step-10, Megatron iter_0000010, DeepSpeed global_step10, HF checkpoint-10, step_10, ckpt-10
STEP_DIR = re.compile(r"(?:step|iter|global_step|checkpoint|ckpt)[-_]?0*(\d+)")


@dataclass(frozen=True)
class Check:
    """The verdict on one checkpoint directory."""

    ok: bool
    format: str | None  # dcp | safetensors | torch | None
    problem: str | None = None  # why it is not usable


def step_dirs(checkpoint_dir: Path) -> dict[int, Path]:
    """Step number -> directory, for the step-like directories directly under `checkpoint_dir`."""
    found: dict[int, Path] = {}
    try:
        entries = sorted(checkpoint_dir.iterdir())
    except OSError:
        return found
    for d in entries:
        m = STEP_DIR.fullmatch(d.name)
        if m and d.is_dir() and not d.is_symlink():
            found.setdefault(int(m.group(1)), d)
    return found


def on_disk(checkpoint_dir: str | None, step: int) -> str:
    """What is on disk now of the checkpoint of `step` under the run's configured `checkpoint_dir` (from
    run.toml, never from a log line), in one sentence for an incident's evidence."""
    if not checkpoint_dir:
        return "on disk: not checked (run.toml gives no checkpoint_dir)"
    root = Path(checkpoint_dir)
    if not root.is_dir():
        return f"on disk: not checked ({checkpoint_dir} is not reachable from here)"
    dirs = step_dirs(root)
    if step not in dirs:
        newest = max((s for s in dirs if s < step), default=None)
        there = f"; the newest before it is step {newest}" if newest is not None else "; no older step either"
        return f"on disk: no directory for step {step} in {checkpoint_dir}{there}"
    check = verify(dirs[step])
    if not check.ok:
        return f"on disk: {dirs[step]} is unusable: {check.problem}"
    return f"on disk: {dirs[step]} is complete now (written or restored after the resume)"


def verify(path: Path) -> Check:
    """Is the checkpoint in `path` complete? Tries the formats in turn, by the files present."""
    try:
        names = {p.name for p in path.iterdir()}
    except OSError as e:
        return Check(False, None, f"cannot read {path}: {e.strerror}")
    if ".metadata" in names or any(n.endswith(".distcp") for n in names):
        return _verify_dcp(path, names)
    if any(n.endswith(".safetensors") for n in names):
        return _verify_safetensors(path, names)
    torch_files = sorted(p for p in path.rglob("*") if p.suffix in (".pt", ".pth", ".bin") and p.is_file())
    if torch_files:
        return _verify_torch_files(torch_files)
    return Check(False, None, "no manifest or checkpoint files found")


class _Inert:
    """What every class in the metadata pickle becomes: an object that only keeps its state."""

    def __new__(cls, *args, **kwargs):
        obj = object.__new__(cls)
        obj.args = args
        return obj

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        # dataclasses with slots pickle as (dict state, slot state)
        parts = state if isinstance(state, tuple) else (state,)
        for part in parts:
            if isinstance(part, dict):
                self.__dict__.update(part)


def _inert_attribute(owner, name: str) -> _Inert:
    """Stands in for `getattr(SomeEnum, "MEMBER")`, the way newer Pythons pickle enum members."""
    return _Inert(owner, name)


_SAFE_BUILTINS = {"set": set, "frozenset": frozenset, "getattr": _inert_attribute}


class _MetadataUnpickler(pickle.Unpickler):
    """Reads torch.distributed.checkpoint metadata without importing or calling anything real."""

    _stubs: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str):
        if module == "collections" and name == "OrderedDict":
            return dict
        if module == "builtins" and name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        if module.split(".")[0] in ("torch", "pathlib", "enum"):
            key = (module, name)
            if key not in self._stubs:
                self._stubs[key] = type(name, (_Inert,), {"__module__": module})
            return self._stubs[key]
        raise pickle.UnpicklingError(f"{module}.{name} has no place in checkpoint metadata")


def _verify_dcp(path: Path, names: set[str]) -> Check:
    """`.metadata` loads, and each storage file it names exists and holds the bytes it points at."""
    if ".metadata" not in names:
        return Check(False, "dcp", "no .metadata: the save did not finish")
    try:
        with open(path / ".metadata", "rb") as f:
            meta = _MetadataUnpickler(f).load()
    except Exception as e:  # truncated, not a pickle, or a pickle of something else
        return Check(False, "dcp", f".metadata does not load: {type(e).__name__}: {e}")
    storage = getattr(meta, "storage_data", None)
    if type(meta).__name__ != "Metadata" or not isinstance(storage, dict) or not storage:
        return Check(False, "dcp", ".metadata names no storage files")
    need: dict[str, int] = {}
    for info in storage.values():
        rel, offset, length = (getattr(info, k, None) for k in ("relative_path", "offset", "length"))
        if not isinstance(rel, str) or not isinstance(offset, int) or not isinstance(length, int) or "/" in rel:
            return Check(False, "dcp", ".metadata has a malformed storage entry")
        need[rel] = max(need.get(rel, 0), offset + length)
    for rel, size in sorted(need.items()):
        f = path / rel
        if not f.is_file():
            return Check(False, "dcp", f"{rel} is missing")
        if f.stat().st_size < size:
            return Check(False, "dcp", f"{rel} is {f.stat().st_size} bytes, metadata needs {size}")
    return Check(True, "dcp")


def _verify_safetensors(path: Path, names: set[str]) -> Check:
    """Each .safetensors header parses and the file is as long as its last tensor needs; JSON sidecars load."""
    for n in sorted(names):
        f = path / n
        if n.endswith(".json"):
            try:
                json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                return Check(False, "safetensors", f"{n} does not load: {e}")
        elif n.endswith(".safetensors"):
            problem = _safetensors_problem(f)
            if problem:
                return Check(False, "safetensors", f"{n}: {problem}")
    return Check(True, "safetensors")


def _safetensors_problem(f: Path) -> str | None:
    size = f.stat().st_size
    with open(f, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            return "shorter than its header"
        (n,) = struct.unpack("<Q", head)
        if n > size - 8 or n > 100_000_000:
            return "header length past the end of the file"
        try:
            header = json.loads(fh.read(n))
        except ValueError:
            return "header is not JSON"
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    if 8 + n + max(ends, default=0) > size:
        return "truncated"
    return None


def _verify_torch_files(files: list[Path]) -> Check:
    """torch.save files are zip archives: a truncated one has no readable central directory."""
    for f in files:
        try:
            with zipfile.ZipFile(f) as z:
                z.infolist()
        except (zipfile.BadZipFile, OSError) as e:
            return Check(False, "torch", f"{f.name} is not a complete torch file: {e}")
    return Check(True, "torch")
