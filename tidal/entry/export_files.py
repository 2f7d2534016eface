"""Writing an acting network as one TorchScript or ONNX file, and running the written file back.

Both formats trace the network once on real inputs: it is a fixed graph of tensor ops with a free batch axis.
ONNX goes through torch's TorchScript-based exporter (`dynamo=False`): on these graphs it gives the same file
in a fraction of a second, where the torch.export-based one takes 10-40 s per network.
"""
from __future__ import annotations

import importlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
import torch
import torch.nn as nn

from tidal.base.errors import TidalError

#: Export formats and the suffix of their default file.
FORMATS = {'torchscript': '.pt', 'onnx': '.onnx'}
ONNX_OPSET = 17
ONNX_MISSING = 'tidal export --format onnx needs onnx and onnxruntime: pip install -e ".[export]"'

#: Runs the written file on a tuple of input tensors and gives its outputs as numpy arrays.
Runner = Callable[[Sequence[torch.Tensor]], tuple[np.ndarray, ...]]
T = TypeVar('T')


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[Any, ...]  # 'batch' for the free leading axis
    dtype: str

    def __str__(self) -> str:
        return f"{self.name} [{', '.join(str(size) for size in self.shape)}] {self.dtype}"


@dataclass(frozen=True)
class ExportedFile:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def require_onnx() -> Any:
    """onnxruntime, after checking that onnx imports too; one line naming the extra where either is missing."""
    try:
        importlib.import_module('onnx')
        return importlib.import_module('onnxruntime')
    except ImportError:
        raise TidalError(ONNX_MISSING) from None


def write_exported(network: nn.Module, format: str, path: Path, example: Sequence[torch.Tensor],
                   input_names: Sequence[str], output_names: Sequence[str],
                   check: Callable[[Runner], T]) -> tuple[ExportedFile, T]:
    """Trace `network` on `example`, write it to a temporary file, load that back and `check` it (which raises
    on a mismatch); only then rename it to `path`, so a file there is always one that passed."""
    example = tuple(example)
    outputs = network(*example)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    described = ExportedFile(tuple(_spec(name, x) for name, x in zip(input_names, example)),
                             tuple(_spec(name, x) for name, x in zip(output_names, outputs)))
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if format == 'torchscript':
            run = _write_torchscript(network, example, tmp)
        else:
            run = _write_onnx(network, example, tmp, input_names, output_names)
        result = check(run)
        os.replace(tmp, path)
    except OSError as err:
        raise TidalError(f"cannot write '{path}': {err.strerror or err}") from err
    finally:
        tmp.unlink(missing_ok=True)
    return described, result


def _spec(name: str, tensor: torch.Tensor) -> TensorSpec:
    return TensorSpec(name, ('batch', *tensor.shape[1:]), str(tensor.dtype).removeprefix('torch.'))


def _write_torchscript(network: nn.Module, example: tuple[torch.Tensor, ...], tmp: Path) -> Runner:
    with warnings.catch_warnings():  # torch 2.13 marks torch.jit deprecated; it is what writes TorchScript
        warnings.filterwarnings('ignore', category=DeprecationWarning)
        warnings.filterwarnings('ignore', category=torch.jit.TracerWarning)
        traced = torch.jit.trace(network, example, check_trace=False)
        torch.jit.save(traced, str(tmp))
        loaded = torch.jit.load(str(tmp), map_location='cpu')

    def run(inputs: Sequence[torch.Tensor]) -> tuple[np.ndarray, ...]:
        with torch.no_grad():
            outputs = loaded(*inputs)
        return tuple(x.numpy() for x in (outputs if isinstance(outputs, tuple) else (outputs,)))
    return run


def _write_onnx(network: nn.Module, example: tuple[torch.Tensor, ...], tmp: Path, input_names: Sequence[str],
                output_names: Sequence[str]) -> Runner:
    onnxruntime = require_onnx()
    batch_axes = {name: {0: 'batch'} for name in (*input_names, *output_names)}
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', category=DeprecationWarning)
        warnings.filterwarnings('ignore', category=torch.jit.TracerWarning)
        torch.onnx.export(network, example, str(tmp), input_names=list(input_names), output_names=list(output_names),
                          dynamic_axes=batch_axes, opset_version=ONNX_OPSET, dynamo=False)
    session = onnxruntime.InferenceSession(str(tmp), providers=['CPUExecutionProvider'])

    def run(inputs: Sequence[torch.Tensor]) -> tuple[np.ndarray, ...]:
        feed = {name: x.cpu().numpy() for name, x in zip(input_names, inputs)}
        return tuple(session.run(list(output_names), feed))
    return run
