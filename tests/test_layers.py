"""tidal's layers as a contract: imports go down (ground floor < rl_utils, models, envs, config, mcts <
policies | worker and its feeds < entry), never up, and no module imports itself round a circle. `policies`
and `worker` are siblings: neither imports the other (workers know a policy by the ground floor's Protocols)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles: groups of two or more modules that reach each other (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def test_no_module_imports_itself_round_a_circle():
    assert strongly_connected(grimp.build_graph('tidal')) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = grimp.ImportGraph()
    for module in ('pkg.a', 'pkg.b', 'pkg.c'):
        graph.add_module(module)
    graph.add_import(importer='pkg.a', imported='pkg.b')
    graph.add_import(importer='pkg.b', imported='pkg.a')
    graph.add_import(importer='pkg.c', imported='pkg.a')
    assert strongly_connected(graph) == [['pkg.a', 'pkg.b']]


def test_policies_and_worker_import_neither_the_other():
    graph = grimp.build_graph('tidal')
    for importer, imported in (('tidal.worker', 'tidal.policies'), ('tidal.policies', 'tidal.worker')):
        chains = graph.find_shortest_chains(importer=importer, imported=imported)
        assert chains == set(), f'{importer} reaches {imported}: {sorted(chains)}'


def test_imports_keep_to_the_layers_of_the_importlinter_config():
    result = subprocess.run([sys.executable, '-c', 'import sys; from importlinter.cli import lint_imports; '
                             f'sys.exit(lint_imports(config_filename={str(ROOT / ".importlinter")!r}))'],
                            cwd=ROOT, capture_output=True, text=True)
    assert 'Contracts: 1 kept, 0 broken.' in result.stdout and result.returncode == 0, \
        result.stdout[-3000:] + result.stderr[-2000:]
