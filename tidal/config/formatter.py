"""A compiled config as commented YAML, for `tidal config show`: each key's comment from the class that
declares it."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from tidal.config.comments import config_comments
from tidal.config.model_args import model_args
from tidal.config.run_config import RunConfig
from tidal.config.saver import header_lines, split_config
from tidal.config.tree import join_path, to_plain
from tidal.config.yaml_io import format_scalar
from tidal.base.errors import TidalError
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY, policy_class

_INDENT = '  '
_SECTIONS = (('env', ENV_REGISTRY), ('env_manager', ENV_MANAGER_REGISTRY), ('policy', POLICY_REGISTRY))
_INFERRED = {
    'policy.model.obs_shape': "(int > 0 or list[int > 0]) Observation shape; inferred from the env when not set, "
                              "else checked against it.",
    'policy.model.action_shape': "(int > 0 or list[int > 0]) Action shape (count if discrete); inferred from the "
                                 "env when not set, else checked against it.",
}


def comments_for(cfg: Mapping) -> dict[str, str]:
    """Comments for every key of a compiled config, from the classes its types name."""
    comments = config_comments(RunConfig)
    for section, registry in _SECTIONS:
        name = cfg.get(section, {}).get('type')
        if name in registry:
            cls = policy_class(name, cfg[section]) if registry is POLICY_REGISTRY else registry.get(name)
            comments.update({join_path(section, path): text
                             for path, text in config_comments(cls, cfg[section]).items()})
    for path, text in _INFERRED.items():
        comments.setdefault(path, text)
    for key, text in _model_argument_comments(cfg).items():
        comments.setdefault(f'policy.model.{key}', text)
    return comments


def _model_argument_comments(cfg: Mapping) -> dict[str, str]:
    """'(rule) Argument of model ...' for the `policy.model` keys the model's type hints give a rule."""
    policy = cfg.get('policy', {})
    if policy.get('type') not in POLICY_REGISTRY:
        return {}
    try:
        args = model_args(policy_class(policy['type'], policy), policy['type'], dict(policy.get('model') or {}),
                          policy)
    except TidalError:
        return {}
    return {key: f"({rule.text}) Argument of model '{args.name}'." for key, rule in args.rules.items()}


def format_config(cfg: Mapping, comments: Optional[Mapping[str, str]] = None) -> str:
    """Block YAML with each key's comment on the lines above it; valid YAML as it is."""
    lines: list[str] = []
    _emit(to_plain(cfg), '', 0, comments or {}, lines)
    return '\n'.join(lines) + '\n'


_SHOW_TITLE = ('Resolved tidal config: every key with its value, rule and meaning. `tidal train FILE` runs it '
               'as it is.')


def format_run_config(cfg: Mapping, comments: Optional[Mapping[str, str]] = None, sources: Sequence[str] = ()) -> str:
    """The config in the main_config / create_config layout that `tidal train` reads, each key's comment
    above it and the layers it was made from at the top: `tidal config show NAME > my.yaml` runs."""
    main, create = split_config(cfg)
    comments = comments or {}
    in_layout = {join_path(entry, path): text for entry in ('main_config', 'create_config')
                 for path, text in comments.items()}
    lines = header_lines(sources, _SHOW_TITLE)
    _emit({'main_config': main, 'create_config': create}, '', 0, in_layout, lines, gap_depth=1)
    return '\n'.join(lines) + '\n'


def _emit(node: Mapping, prefix: str, depth: int, comments: Mapping[str, str], lines: list[str],
          gap_depth: int = 0) -> None:
    """Appends the YAML lines of `node`; a blank line goes before each section down to `gap_depth`."""
    indent = _INDENT * depth
    for key, value in node.items():
        path = join_path(prefix, key)
        is_section = isinstance(value, Mapping) and bool(value)
        if depth <= gap_depth and is_section and lines and not lines[-1].endswith(':'):
            lines.append('')
        lines.extend(f'{indent}# {text}'.rstrip() for text in comments.get(path, '').splitlines())
        if is_section:
            lines.append(f'{indent}{format_scalar(key)}:')
            _emit(value, path, depth + 1, comments, lines, gap_depth)
        else:
            lines.append(f'{indent}{format_scalar(key)}: {format_scalar(value)}')
