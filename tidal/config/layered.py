"""Compiling a config made of layers: a config file or zoo config, its bases, the files put over it
(`tidal train pendulum_sac --config my.yaml`) and the `--set` overrides, each over the ones before.

The merged layers go through compile_config once, with the same checks as one whole file. Only when that
fails is the error traced to a layer, by compiling the layers one more at a time until the same error
appears, so that the message can name the file that brought the bad key in.
"""
from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Union

from easydict import EasyDict

from tidal.config.compiler import compile_config
from tidal.config.loader import Layer, config_layers, merge_layers, read_layers
from tidal.base.errors import TidalError


@dataclass(frozen=True)
class ConfigLayers:
    """A config (a path, a zoo name or a (main_config, create_config) pair) with files merged over it in
    order: what `tidal train CONFIG --config FILE...` runs. Each file may hold only some keys."""

    config: Union[str, os.PathLike, tuple]
    files: Sequence[Union[str, os.PathLike]] = ()


ConfigInput = Union[str, os.PathLike, tuple, ConfigLayers]


@dataclass(frozen=True)
class ResolvedConfig:
    """A compiled config and where its values came from, first layer first (saved beside it)."""

    cfg: EasyDict
    sources: tuple[str, ...]


def input_layers(input_cfg: ConfigInput) -> list[Layer]:
    """The layers of a config input, the deepest base first."""
    if isinstance(input_cfg, ConfigLayers):
        layers = input_layers(input_cfg.config)
        for path in input_cfg.files:
            layers += read_layers(os.fspath(path), partial=True)
        return layers
    if isinstance(input_cfg, (tuple, list)):
        main_config, create_config = input_cfg
        given = 'the (main_config, create_config) given'
        return [Layer(given, given, main_config, create_config)]
    return config_layers(os.fspath(input_cfg))


def load_layered(input_cfg: ConfigInput, seed: Optional[int] = None, overrides: Iterable[str] = ()) -> ResolvedConfig:
    """Compile a config input with its layers and overrides; `seed` wins over the config's seed."""
    layers = input_layers(input_cfg)
    overrides = [overrides] if isinstance(overrides, str) else list(overrides)
    cfg = compile_layers(layers, seed, overrides)
    sources = [layer.recorded for layer in layers] + [f'--set {text}' for text in overrides]
    return ResolvedConfig(cfg, tuple(sources))


def compile_layers(layers: Sequence[Layer], seed: Optional[int] = None, overrides: Sequence[str] = ()) -> EasyDict:
    """compile_config of the merged layers; an error that one layer brings in starts with that layer's name."""
    try:
        return compile_config(*_merged(layers), seed=seed, overrides=overrides)
    except TidalError as err:
        culprit = _first_layer_raising(layers, seed, err) if len(layers) > 1 else None
        if culprit is not None:
            err.args = (f'{culprit.source}: {err}', *err.args[1:])
        raise


def _merged(layers: Sequence[Layer]) -> tuple[dict, dict]:
    """One layer as it is (compile_config checks its entries' shapes), several merged."""
    if len(layers) == 1:
        return layers[0].main, layers[0].create
    return merge_layers(layers)


def _first_layer_raising(layers: Sequence[Layer], seed: Optional[int], error: TidalError) -> Optional[Layer]:
    """The layer whose keys, over the layers before it, first give the same error (without the overrides);
    None when no prefix does (the error comes from `--set`, or from keys of several layers together)."""
    for count in range(1, len(layers) + 1):
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # DI-engine notices were printed once already
                compile_config(*_merged(layers[:count]), seed=seed)
        except TidalError as again:
            if type(again) is type(error) and str(again) == str(error):
                return layers[count - 1]
    return None

