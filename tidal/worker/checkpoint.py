"""Checkpoint files that load without running code, detect corrupted tensor data and fail in one line.

A checkpoint is a torch zip archive holding
`{'format': 'tidal-checkpoint', 'version': 1, 'checksum': <sha256 hex>, 'state': state}`.
Loading uses `torch.load(weights_only=True)`, which builds only plain containers, scalars and tensors,
so a crafted file cannot run code. The checksum covers every tensor's key path, dtype, shape and bytes:
torch does not check the zip's CRCs, so without it flipped bits in the weights load silently.
Files are written to a temporary file, synced and renamed, so a crash never leaves a half-written one.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator

import torch

from tidal.base.errors import CheckpointError
from tidal.base.nest import KeyPath, path_name
from tidal.base.policy import PolicyLike

FORMAT = 'tidal-checkpoint'
VERSION = 1

# what `torch.load(weights_only=True)` rebuilds; anything else is refused at save time
_SCALARS = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device)
_CONTAINERS = (dict, OrderedDict, list, tuple, torch.Size)
_TENSORS = (torch.Tensor, torch.nn.Parameter)



def save_checkpoint(state: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write `state` to `path` through a synced temporary file and an atomic rename."""
    path = Path(path)
    state = _own_storage(state)
    checksum = _checksum(state, f"cannot save checkpoint '{path}'")
    checkpoint = {'format': FORMAT, 'version': VERSION, 'checksum': checksum, 'state': state}
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, 'wb') as file:
            torch.save(checkpoint, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
        _sync_folder(path.parent)
    except (OSError, RuntimeError) as err:
        _remove(tmp)
        reason = _write_failure(err)
        if reason is None:
            raise
        raise CheckpointError(f"cannot write checkpoint '{path}': {reason}") from None
    except BaseException:
        _remove(tmp)
        raise
    return path


def _own_storage(value: Any) -> Any:
    """`value` with every tensor that views a larger storage copied out: torch.save writes a view's whole
    storage, so one seed's slice of a seed group's stacked weights would carry every seed's."""
    if isinstance(value, torch.Tensor):
        if value.untyped_storage().nbytes() > value.numel() * value.element_size():
            return value.clone()
        return value
    if isinstance(value, (dict, OrderedDict)):
        return type(value)((key, _own_storage(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return type(value)(_own_storage(item) for item in value)
    return value


def _write_failure(err: BaseException) -> str | None:
    """Why writing failed, or None when `err` is no write failure. torch.save reports a full disk as a
    RuntimeError from its zip writer ('[enforce fail at inline_container.cc...] unexpected pos') raised
    while handling the OSError of the file's write; the OSError says what happened."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, OSError):
            return cause.strerror or str(cause)
        cause = cause.__cause__ or cause.__context__
    if isinstance(err, RuntimeError) and 'inline_container' in str(err):
        return f"torch's archive writer failed ({str(err).splitlines()[0]})"
    return None


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = 'cpu') -> dict[str, Any]:
    """The state saved by `save_checkpoint`, after checking its format and checksum."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint '{path}' not found")
    checkpoint = _read(path, map_location)
    if not isinstance(checkpoint, dict) or checkpoint.get('format') != FORMAT:
        raise CheckpointError(f"checkpoint '{path}' is not a tidal checkpoint (it has no 'format': "
                              f"'{FORMAT}' entry)")
    if checkpoint.get('version') != VERSION:
        raise CheckpointError(f"checkpoint '{path}' has format version {checkpoint.get('version')!r}; "
                              f'this tidal reads version {VERSION}')
    if 'state' not in checkpoint or _checksum(checkpoint['state'], f"checkpoint '{path}'") \
            != checkpoint.get('checksum'):
        raise CheckpointError(f"checkpoint '{path}' is corrupted: its tensor data does not match the "
                              'recorded checksum')
    return checkpoint['state']


def policy_state(checkpoint: dict[str, Any], path: str | os.PathLike) -> dict[str, Any]:
    """The policy part of a run checkpoint (or of a bare policy state dict)."""
    state = checkpoint.get('policy', checkpoint)
    if 'model' not in state:
        raise CheckpointError(f"checkpoint '{path}' holds no policy weights (no 'model' entry)")
    return state


def load_policy_weights(policy: PolicyLike, state: dict[str, Any], path: str | os.PathLike) -> None:
    """`policy.load_weights(state)`, with a network that does not fit the weights as one line."""
    try:
        policy.load_weights(state)
    except KeyError as err:
        detail = f"it has no {str(err.args[0] if err.args else '')!r} entry"
    except RuntimeError as err:
        if not str(err).startswith('Error(s) in loading state_dict'):
            raise
        detail = _first_mismatch(str(err))
    else:
        return
    name = policy.cfg.get('type') or type(policy).__name__
    raise CheckpointError(f"checkpoint '{path}' does not fit policy '{name}' as configured: {detail}; "
                          'use the config the checkpoint was trained with') from None


def load_policy_checkpoint(policy: PolicyLike, path: str | os.PathLike) -> None:
    """Load the policy weights of the checkpoint file `path` (a run checkpoint or a bare policy state) into
    `policy`, read straight onto its device; a checkpoint that does not fit is one line."""
    load_policy_weights(policy, policy_state(load_checkpoint(path, map_location=policy.device), path), path)


# ----- reading -------------------------------------------------------------------------------

def _read(path: Path, map_location: str | torch.device) -> Any:
    """`torch.load(weights_only=True)`, its errors sorted into 'unreadable' and 'holds objects'."""
    try:
        with open(path, 'rb') as file:
            magic = file.read(2)
    except OSError as err:
        raise CheckpointError(f"checkpoint '{path}' cannot be read: {err.strerror or err}") from None
    if not magic:
        raise CheckpointError(f"checkpoint '{path}' cannot be read: the file is empty")
    if magic not in (b'PK', b'\x80\x02', b'\x80\x03', b'\x80\x04', b'\x80\x05'):
        raise CheckpointError(f"checkpoint '{path}' cannot be read: it is not a torch checkpoint file")
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols before refusing them
            warnings.simplefilter('ignore')
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        raise CheckpointError(f"checkpoint '{path}' holds Python objects that tidal does not load (it is "
                              f'not a tidal checkpoint, or it was crafted): {_refusal(str(err))}') from None
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        first = str(err).split('. ')[0].splitlines()[0] if str(err) else type(err).__name__
        raise CheckpointError(f"checkpoint '{path}' cannot be read (truncated or damaged): {first}") from None


def _refusal(message: str) -> str:
    """The one line of torch's weights_only error that says what was refused."""
    match = re.search(r'GLOBAL ([\w.]+)', message)
    if match:
        return f'it refers to {match.group(1)}'
    match = re.search(r'Unsupported operand (\d+)', message)
    if match:
        return f'it uses pickle opcode {match.group(1)}, which weights_only loading refuses'
    boilerplate = ('Weights only load failed', 'Please file an issue', 'Check the documentation')
    lines = [line.replace('WeightsUnpickler error:', '').strip() for line in message.splitlines()]
    lines = [line for line in lines if line and not line.startswith(boilerplate)]
    return lines[0].rstrip('.') if lines else 'refused by weights_only loading'


def _first_mismatch(message: str) -> str:
    """The first problem `load_state_dict` reported, size mismatches first, and how many others."""
    problems = [line.strip() for line in message.splitlines()[1:] if line.strip()]
    problems.sort(key=lambda line: not line.startswith('size mismatch'))
    first = problems[0] if problems else message.splitlines()[0]
    size = re.match(r'size mismatch for (\S+): copying a param with shape torch\.Size\((\[.*?\])\) from '
                    r'checkpoint, the shape in current model is torch\.Size\((\[.*?\])\)', first)
    keys = re.match(r'(Missing|Unexpected) key\(s\) in state_dict: (.*)', first)
    if size:
        first = f'size mismatch for {size.group(1)}: checkpoint {size.group(2)}, model {size.group(3)}'
    elif keys:
        names = re.findall(r'"([^"]+)"', keys.group(2))
        more = f' (and {len(names) - 1} more)' if len(names) > 1 else ''
        first = f"{keys.group(1).lower()} key '{names[0] if names else '?'}'{more}"
    others = len(problems) - 1
    return first + (f' (and {others} more difference{"s" * (others > 1)})' if others > 0 else '')


# ----- the checksum --------------------------------------------------------------------------

def _checksum(state: Any, where: str) -> str:
    """sha256 over every tensor's key path, dtype, shape and bytes, in the state's own order."""
    digest = hashlib.sha256()
    for key_path, tensor in _tensors(state, (), where, set()):
        tensor = tensor.detach().cpu().resolve_conj().resolve_neg()
        if not tensor.is_contiguous() or 0 in tensor.stride():  # a broadcast element counts as contiguous
            tensor = torch.empty_like(tensor, memory_format=torch.contiguous_format).copy_(tensor)
        digest.update(f'{key_path!r}|{tensor.dtype}|{tuple(tensor.shape)}\n'.encode())
        # numpy's stubs give ndarray __buffer__ only for Python >= 3.12 (mypy checks as 3.11); arrays are buffers
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())  # type: ignore[arg-type]
    return digest.hexdigest()


def _tensors(value: Any, key_path: KeyPath, where: str, open_containers: set[int]) -> Iterator[
        tuple[KeyPath, torch.Tensor]]:
    """Every tensor under `value`; anything weights_only loading would refuse is an error here."""
    kind = type(value)
    if kind in _TENSORS:
        if value.layout != torch.strided or value.is_quantized or value.device.type == 'meta':
            raise CheckpointError(f"{where}: '{path_name(key_path)}' is a {value.layout} "
                                  f'{"quantized " * value.is_quantized}tensor on {value.device}; '
                                  'checkpoints hold dense tensors with data')
        yield key_path, value
    elif kind in _CONTAINERS:
        if id(value) in open_containers:
            raise CheckpointError(f"{where}: '{path_name(key_path)}' contains itself")
        open_containers.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                _check_key(key, key_path, where)
                yield from _tensors(item, key_path + (key,), where, open_containers)
        else:
            for index, item in enumerate(value):
                yield from _tensors(item, key_path + (index,), where, open_containers)
        open_containers.discard(id(value))
    elif kind is set:
        for item in value:
            _check_key(item, key_path, where)
    elif kind not in _SCALARS:
        raise CheckpointError(f"{where}: '{path_name(key_path)}' holds a {kind.__module__}."
                              f'{kind.__qualname__}, which checkpoints do not store (use tensors, dicts, '
                              'lists and Python scalars)')


def _check_key(key: Any, key_path: KeyPath, where: str) -> None:
    """Dict keys and set items: scalars or tuples of them (a tensor's place in a set is not stable)."""
    if type(key) is tuple:
        for item in key:
            _check_key(item, key_path, where)
    elif type(key) not in _SCALARS:
        kind = type(key)
        raise CheckpointError(f"{where}: '{path_name(key_path)}' has a key of type "
                              f'{kind.__module__}.{kind.__qualname__}, which checkpoints do not store')


def _remove(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable; some platforms cannot open a folder, which is harmless."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
