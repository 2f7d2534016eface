"""docs/write_your_own_algorithm.md runs as it is written.

Every Python block of the page is a file, named by its first line (`# reinforce.py`); the blocks that
examples/ also holds must equal those files. The test writes the files into a fresh folder, runs
`train.py` (a short training of both examples through the Python API), runs the page's `tidal` commands
in order (trainings with a small budget), and checks the page's one-line error example.
"""
import os
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

from tidal.entry.cli import main
from tidal.registry import ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / 'docs' / 'write_your_own_algorithm.md'
EXAMPLES = ROOT / 'examples'
BLOCK = re.compile(r'^```(\w*)\n(.*?)^```$', re.MULTILINE | re.DOTALL)
FILE_NAME = re.compile(r'# ([\w/]+\.py)\n')
SHORT_BUDGET = '1100'  # env steps: past the DQN example's 1000 steps of warm-up


def blocks(language):
    return [body for lang, body in BLOCK.findall(PAGE.read_text()) if lang == language]


def page_files():
    """File name -> text of the page's Python blocks."""
    files = {}
    for body in blocks('python'):
        match = FILE_NAME.match(body)
        assert match, f'a Python block of the page must start with its file name, e.g. "# my_file.py":\n{body}'
        assert match.group(1) not in files, f'{match.group(1)} appears twice'
        files[match.group(1)] = body
    return files


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A fresh working folder; the modules the page registers, imports and path entries are undone after."""
    tables = {registry: dict(registry._table) for registry in (POLICY_REGISTRY, MODEL_REGISTRY, ENV_REGISTRY)}
    modules, path = set(sys.modules), list(sys.path)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for registry, table in tables.items():
        registry._table.clear()
        registry._table.update(table)
    for name in set(sys.modules) - modules:
        module_file = getattr(sys.modules[name], '__file__', None) or ''
        if module_file.startswith(str(tmp_path)):
            del sys.modules[name]
    sys.path[:] = path


def test_python_blocks_are_the_example_files():
    files = page_files()
    examples = {path.name for path in EXAMPLES.glob('*.py')}
    assert examples <= set(files), f'examples/ files missing from the page: {sorted(examples - set(files))}'
    for name in examples:
        assert files[name] == (EXAMPLES / name).read_text(), f'the page and examples/{name} differ'


def test_the_page_runs_as_written(scratch, capsys):
    for name, text in page_files().items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text)

    # train.py, as `python train.py` runs it: its folder first on the import path
    sys.path.insert(0, str(scratch))
    runpy.run_path(str(scratch / 'train.py'), run_name='__main__')
    for run in ('try_reinforce', 'try_dqn'):
        assert (scratch / run / 'evals.csv').read_text().count('\n') >= 2, run
        assert (scratch / run / 'ckpt' / 'latest.pt').is_file(), run
    sys.path.remove(str(scratch))

    # the page's `tidal` commands in order, trainings with a small budget
    commands = [line for body in blocks('bash') for line in body.splitlines() if line.startswith('tidal ')]
    assert sum(command.startswith('tidal train ') for command in commands) >= 2
    assert any(command.startswith('tidal export ') for command in commands)
    for command in commands:
        args = shlex.split(command.split('  #')[0])[1:]
        before = set(scratch.iterdir())
        if args[0] == 'train':
            if '--max-env-step' in args:
                args[args.index('--max-env-step') + 1] = SHORT_BUDGET
            else:
                args += ['--max-env-step', SHORT_BUDGET]
            args.append('--no-progress')
        assert main(args) == 0, f'{command}:\n{capsys.readouterr().err}'
        made = set(scratch.iterdir()) - before
        if args[0] != 'train':
            continue
        assert len(made) == 1, (command, made)  # the run's folder (a seed group's)
        folder = made.pop()
        if '--seeds' in args:  # a seed group: a run folder per seed
            count = int(args[args.index('--seeds') + 1])
            assert len(list(folder.glob('seed_*/evals.csv'))) == count
        else:
            assert (folder / 'evals.csv').is_file()
    assert (scratch / 'cartpole_my_dqn' / 'export' / 'policy.pt').is_file()

    # the page's error example: the command and the one line it prints
    examples = [body.splitlines() for body in blocks('') if body.startswith('$ tidal ')]
    assert examples
    for command, expected, *_ in examples:
        capsys.readouterr()
        assert main(shlex.split(command)[2:]) == 2
        err = capsys.readouterr().err
        assert err == expected + '\n' and 'Traceback' not in err


def test_a_module_given_with_import_is_saved_in_the_run_and_found_again(scratch, capsys):
    """--import entries join the run's import_names, so resume and export need no --import from the folder the
    run was trained in; from elsewhere the saved entry is found again through --import, or named in one line."""
    for name in ('reinforce.py', 'cartpole_reinforce.py'):
        (scratch / name).write_text((EXAMPLES / name).read_text())
    assert main(['train', 'cartpole_reinforce.py', '--import', './reinforce.py', '--max-env-step', '300',
                 '--exp-name', 'run', '--no-progress']) == 0
    assert "import_names:\n  - ./reinforce.py\n" in (scratch / 'run' / 'config.yaml').read_text()
    capsys.readouterr()
    assert main(['resume', 'run']) == 0
    assert 'already ended' in capsys.readouterr().out
    elsewhere = scratch / 'elsewhere'
    elsewhere.mkdir()
    os.chdir(elsewhere)
    sys.modules.pop('reinforce')  # as in a new process
    POLICY_REGISTRY._table.pop('reinforce')
    assert main(['export', '../run']) == 2
    assert capsys.readouterr().err == ("tidal: error: cannot import './reinforce.py' named in import_names: file not "
                                       "found; run tidal from the folder it was given in, or give it again with "
                                       "--import PATH_TO_IT\n")
    assert main(['export', '../run', '--import', '../reinforce.py']) == 2  # imported: REINFORCE has no export
    assert 'defines no acting network (export_actor)' in capsys.readouterr().err
