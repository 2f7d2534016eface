"""The comments written next to the keys of a class's `config` literal, read from the file it was defined in.

A class's `config` literal is the one place its defaults are documented and their rules declared, so the
comments are read from there instead of kept in a second copy that could drift. The file is parsed whole and
the class found in it by its qualified name, so the line numbers of keys and comments are the file's own.
"""
from __future__ import annotations

import ast
import functools
import inspect
import io
import linecache
import tokenize
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

from tidal.config.tree import join_path
from tidal.base.defaults import config_owners, own_config


def config_comments(cls: type, section: Optional[Mapping[str, Any]] = None) -> dict[str, str]:
    """Dotted key path -> comment, over the config owners of `cls` under `section` (its config section;
    None: its defaults); a later owner's comment wins, a key it redefines without a comment keeps the
    earlier one's."""
    comments: dict[str, str] = {}
    for owner in config_owners(cls, section):
        if own_config(owner) is not None:
            comments.update(own_comments(owner))
    return comments


def own_comments(owner: type) -> dict[str, str]:
    """Dotted key path -> comment of the `config` literal `owner` itself defines; {} where its source is not
    to be had (a class made by `exec`, a module shipped without sources)."""
    for path in _source_files(owner):
        source = _parsed(''.join(linecache.getlines(path)))
        node = None if source is None else _class_node(source.tree, owner.__qualname__.split('.'))
        if source is None or node is None:
            continue
        literal = _config_literal(node)
        if literal is None:
            return {}
        found = ((key, _comment_at(line, source)) for key, line in _keys(literal, ''))
        return {key: text for key, text in found if text}
    return {}


@dataclass(frozen=True)
class _Source:
    """A parsed file: its syntax tree, and its comments by line (those on a line of their own apart)."""

    tree: ast.Module
    own_line: dict[int, str]
    trailing: dict[int, str]


def _source_files(owner: type) -> list[str]:
    """The files `owner` may be defined in: those its methods were compiled from, then its module's. The
    methods come first because a module name may since name another file (two `conftest` modules, a reloaded
    notebook module)."""
    files = [function.__code__.co_filename for function in map(_function_of, vars(owner).values())
             if function is not None]
    try:
        files.append(inspect.getsourcefile(owner) or '')
    except TypeError:  # a class of no file: made by exec, or of a built-in module
        pass
    return [path for path in dict.fromkeys(files) if path]


def _function_of(member: Any) -> Optional[Any]:
    """The plain function behind a method, classmethod or staticmethod; None for anything else."""
    member = getattr(member, '__func__', member)
    return member if inspect.isfunction(member) else None


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Optional[_Source]:
    """`text` parsed, with its comments; None for no text or text that is not Python."""
    if not text:
        return None
    try:
        tree = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, tokenize.TokenError):
        return None
    own_line: dict[int, str] = {}
    trailing: dict[int, str] = {}
    for token in tokens:
        if token.type == tokenize.COMMENT:
            comments = own_line if token.line.strip().startswith('#') else trailing
            comments[token.start[0]] = token.string.lstrip('#').strip()
    return _Source(tree, own_line, trailing)


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


def _config_literal(class_node: ast.ClassDef) -> Optional[ast.expr]:
    """The value the class body assigns to `config`."""
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


def _comment_at(line: int, source: _Source) -> str:
    """The comment lines directly above `line` (no blank line between), then its trailing comment."""
    lines: list[str] = []
    previous = line - 1
    while previous in source.own_line:
        lines.insert(0, source.own_line[previous])
        previous -= 1
    if line in source.trailing:
        lines.append(source.trailing[line])
    return '\n'.join(text for text in lines if text)
