"""The comments written next to the keys of a class's `config` defaults, read from its source.

A class's `config` literal is the one place its defaults are documented, so `tidal config show`
reads the comments from there instead of keeping a second copy that could drift.
"""
from __future__ import annotations

import ast
import inspect
import io
import linecache
import textwrap
import tokenize
from typing import Any, Iterator, Mapping, Optional

from tidal.config.defaults import RunConfig
from tidal.config.model_args import model_args
from tidal.config.tree import join_path
from tidal.base.defaults import config_owners, own_config
from tidal.base.errors import TidalError
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY, policy_class

_SECTIONS = (('env', ENV_REGISTRY), ('env_manager', ENV_MANAGER_REGISTRY), ('policy', POLICY_REGISTRY))
_INFERRED = {
    'policy.model.obs_shape': "(int > 0 or list[int > 0]) Observation shape; inferred from the env when not set, "
                              "else checked against it.",
    'policy.model.action_shape': "(int > 0 or list[int > 0]) Action shape (count if discrete); inferred from the "
                                 "env when not set, else checked against it.",
}


def config_comments(cls: type, section: Optional[Mapping[str, Any]] = None) -> dict[str, str]:
    """Dotted key path -> comment, over the config owners of `cls` under `section` (its config section;
    None: its defaults); a later owner's comment wins, a key it redefines without a comment keeps the
    earlier one's."""
    comments: dict[str, str] = {}
    for owner in config_owners(cls, section):
        if own_config(owner) is not None:
            comments.update(own_comments(owner))
    return comments


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


def own_comments(owner: type) -> dict[str, str]:
    """Dotted key path -> comment of the `config` literal `owner` itself defines."""
    try:
        source = textwrap.dedent(_class_source(owner))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):  # defined interactively, or source not shipped
        return {}
    literal = _config_literal(tree)
    if literal is None:
        return {}
    above, trailing = _comment_lines(source)
    comments: dict[str, str] = {}
    for path, line in _keys(literal, ''):
        text = _comment_at(line, above, trailing)
        if text:
            comments[path] = text
    return comments


def _class_source(owner: type) -> str:
    """The source of `owner`, found through the file its methods were compiled from where it has any.

    `inspect.getsource` looks in the file of the module now registered under the class's module name,
    which is another file once that name was reused (two `conftest` modules, a reloaded notebook module).
    """
    files = dict.fromkeys(function.__code__.co_filename for function in map(_function_of, vars(owner).values())
                          if function is not None)
    for path in files:
        lines = linecache.getlines(path)
        try:
            node = _class_node(ast.parse(''.join(lines)), owner.__qualname__.split('.'))
        except SyntaxError:
            continue
        if node is not None:
            first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            return ''.join(lines[first - 1:node.end_lineno])
    return inspect.getsource(owner)


def _function_of(member: Any) -> Optional[Any]:
    """The plain function behind a method, classmethod or staticmethod; None for anything else."""
    member = getattr(member, '__func__', member)
    return member if inspect.isfunction(member) else None


def _class_node(tree: ast.AST, qualname: list[str]) -> Optional[ast.ClassDef]:
    """The class definition at dotted `qualname` ('<locals>' parts searched through functions)."""
    scope: ast.AST = tree
    for name in qualname:
        if name == '<locals>':
            continue
        found = next((node for node in ast.walk(scope) if isinstance(node, (ast.ClassDef, ast.FunctionDef,
                      ast.AsyncFunctionDef)) and node.name == name and node is not scope), None)
        if found is None:
            return None
        scope = found
    return scope if isinstance(scope, ast.ClassDef) else None


def _config_literal(tree: ast.Module) -> Optional[ast.expr]:
    """The value assigned to `config` in the body of the first class of `tree`."""
    class_node = next((node for node in tree.body if isinstance(node, ast.ClassDef)), None)
    if class_node is None:
        return None
    for statement in class_node.body:
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets = [statement.target]
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == 'config' for target in targets):
            return statement.value
    return None


def _keys(node: ast.expr, prefix: str) -> Iterator[tuple[str, int]]:
    """(dotted path, line of the key) for each key of a `dict(...)` call or `{...}` literal, nested."""
    for key, line, value in _entries(node):
        path = join_path(prefix, key)
        yield path, line
        yield from _keys(value, path)


def _entries(node: ast.expr) -> Iterator[tuple[str, int, ast.expr]]:
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value, key.lineno, value
    elif isinstance(node, ast.Call) and _is_dict_constructor(node.func):
        for keyword in node.keywords:
            if keyword.arg is not None:
                yield keyword.arg, keyword.lineno, keyword.value


def _is_dict_constructor(func: ast.expr) -> bool:
    """dict(...), EasyDict(...), FreeDict(...) and the like."""
    name = func.id if isinstance(func, ast.Name) else getattr(func, 'attr', '')
    return name.lower().endswith('dict')


def _comment_lines(source: str) -> tuple[dict[int, str], dict[int, str]]:
    """Comments on lines of their own, and comments after code, by line number."""
    own_line: dict[int, str] = {}
    trailing: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = token.string.lstrip('#').strip()
            line = token.start[0]
            (own_line if token.line.strip().startswith('#') else trailing)[line] = text
    return own_line, trailing


def _comment_at(line: int, above: dict[int, str], trailing: dict[int, str]) -> str:
    """The comment lines directly above `line` (no blank line between), then its trailing comment."""
    lines: list[str] = []
    previous = line - 1
    while previous in above:
        lines.insert(0, above[previous])
        previous -= 1
    if line in trailing:
        lines.append(trailing[line])
    return '\n'.join(text for text in lines if text)
