"""Every `tidal` command in the fenced blocks of README.md and the docs pages (docs/**/*.md) runs, with its budget
shrunk.

The commands of a page section (the text under one heading) run in order in one fresh folder, as a reader following
that section would type them: a `tidal eval` finds the run its section trained. A command run without its section's
earlier commands (on its own, or in the slow set of tests/slow_tests.txt) runs them first. A block whose first line
names a file (`# my.yaml`) is written into the folder first. An `$ tidal ...` example is run and the one line it
prints is compared. Budgets shrink through command-line options only (`--max-env-step`, `--trials`,
`--budget-env-steps`, `--episodes`, `--max-train-iter`, `--train-iter` of DI-engine's command form,
`build-datasets`' `--max-env-step` and `--transitions`), so every other word runs as written.

Skipped, each with its reason: usage synopses (placeholders such as CONFIG or [--seeds N]: each names a real
subcommand, checked through `--help`), `pip install` (the test's own environment is the install), the test command
itself, extras CI does not install (EnvPool), and `torchrun` lines, whose several processes (and machines)
tests/entry/test_ddp.py and tests/worker/test_ray_cluster.py start. docs/write_your_own_algorithm.md's commands need
the page's own files and run in tests/docs/test_guide.py.
"""
from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from slow_tests import slow_test_ids
from tidal.entry.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / 'README.md', *sorted(path for path in (ROOT / 'docs').rglob('*.md')
                                     if path.name != 'write_your_own_algorithm.md')]
BLOCK = re.compile(r'^```(\w*)\n(.*?)^```$', re.MULTILINE | re.DOTALL)
HEADING = re.compile(r'^#{1,6} (.+)$', re.MULTILINE)
FILE_BLOCK = re.compile(r'# ([\w./-]+\.(?:yaml|yml|json|py))\n')
PLACEHOLDER = re.compile(r'\[|\b[A-Z][A-Z_]{2,}\b')  # CONFIG, RUN_DIR, [--seeds N]

SHORT_BUDGET = 1200  # env steps: past the warm-up of the zoo's replay configs (SAC's 1000)
#: Configs whose runs are cheaper (MuZero searches at every env step) or need more env steps than SHORT_BUDGET.
BUDGETS = {'pong_ppo': 256, 'lunarlander_ppg': 2048, 'cartpole_muzero': 256, 'cartpole_muzero_reanalyze': 256,
           'lunarlander_muzero': 256, 'pendulum_iql_online': 200}
#: Every shortened training evaluates one episode.
SHORT_EVAL = ['--set', 'env.evaluator_env_num=1', '--set', 'env.n_evaluator_episode=1']
#: Warm-ups longer than SHORT_BUDGET, shortened.
SHORT_WARM_UP = {name: ['--set', 'policy.random_collect_size=1000']
                 for name in ('hopper_sac', 'mpe_spread_sac', 'mpe_spread_discrete_sac')}
SHORT_TRIALS, SHORT_EPISODES, SHORT_TRAIN_ITER = '2', '1', '40'
#: Lines that do not run here, and why (matched on the line's start).
SKIPPED = {
    'pip install': 'installs packages: the test runs in the installed environment',
    'python -m pytest': 'the test command itself',
    'torchrun ': 'starts several learner processes (on several machines): tests/entry/test_ddp.py and '
                 'tests/worker/test_ray_cluster.py run torchrun',
}
EXTRAS = {'env_manager.type=envpool': 'envpool'}  # a command needing an extra CI does not install: its module


@dataclass
class Command:
    page: str
    section: str
    line: str
    expected: str | None = None  # the line an `$ tidal ...` example prints


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each section of a page, fenced blocks kept whole."""
    blanked = BLOCK.sub(lambda match: ' ' * len(match.group(0)), text)
    starts = [(match.start(), match.group(1)) for match in HEADING.finditer(blanked)]
    bounds = [(0, '(top)')] + starts
    return [(title, text[start:end]) for (start, title), (end, _) in zip(bounds, bounds[1:] + [(len(text), '')])]


def _commands() -> list[tuple[Command, list[tuple[str, str]]]]:
    """Each section's commands, with the files its blocks name, in page order."""
    found = []
    for page in PAGES:
        for title, body in _sections(page.read_text()):
            files, commands = [], []
            for language, block in BLOCK.findall(body):
                named = FILE_BLOCK.match(block)
                if named and language != 'bash':
                    files.append((named.group(1), block))
                    continue
                lines = _joined(block.splitlines())
                for index, line in enumerate(lines):
                    if line.startswith('$ tidal '):
                        commands.append(Command(page.name, title, line[2:], lines[index + 1]))
                    elif re.match(r'(pip|python|torchrun|tidal) ', line) and 'tidal ' in line:
                        commands.append(Command(page.name, title, line))
            found += [(command, files) for command in commands]
    return found


def _joined(lines: list[str]) -> list[str]:
    """Lines continued with a backslash, joined."""
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith('\\'):
            joined[-1] = joined[-1][:-1].rstrip() + ' ' + line.strip()
        else:
            joined.append(line)
    return joined


COMMANDS = _commands()


def _skip_reason(line: str) -> str | None:
    for start, reason in SKIPPED.items():
        if line.startswith(start) and 'tidal ' not in line.split('&&')[-1]:
            return reason
    if line.startswith('torchrun '):
        return SKIPPED['torchrun ']
    for marker, module in EXTRAS.items():
        if marker in line and importlib.util.find_spec(module) is None:
            return f"needs the '{module}' extra, which CI does not install"
    return None


def _shrunk(args: list[str]) -> list[str]:
    """The command's arguments with its budget made small enough for a test."""
    command = args[0] if args else ''
    if command == 'train' and '--max-train-iter' in args:  # an offline run: its budget is in train iterations
        args = _replaced(args, '--max-train-iter', SHORT_TRAIN_ITER) + SHORT_EVAL
    elif command == 'train':
        name = Path(args[1]).stem
        args = _replaced(args, '--max-env-step', str(BUDGETS.get(name, SHORT_BUDGET)))
        args += SHORT_EVAL + SHORT_WARM_UP.get(name, [])
    elif command == 'build-datasets':  # the expert must beat random actions: SAC on Pendulum does by 5000 steps
        args = _replaced(_replaced(args, '--max-env-step', '5000'), '--transitions', '400')
        args += ['--no-progress', '--set', 'policy.eval.evaluator.eval_freq=500', *SHORT_EVAL,
                 *SHORT_WARM_UP.get(args[1], [])]
    elif command == '-m' and '--train-iter' in args:  # DI-engine's command form of an offline run
        args = _replaced(args, '--train-iter', SHORT_TRAIN_ITER) + SHORT_EVAL + ['--no-progress']
    elif command == 'tune':
        args = _replaced(_replaced(args, '--trials', SHORT_TRIALS), '--budget-env-steps', str(SHORT_BUDGET))
    elif command == 'eval':
        args = _replaced(args, '--episodes', SHORT_EPISODES)
    elif command == 'collect-demos':
        args = _replaced(args, '--episodes', SHORT_EPISODES)
    elif command == 'resume' and '--max-env-step' in args:  # past its section's shortened training, by as much
        args = _replaced(args, '--max-env-step', str(2 * SHORT_BUDGET))
    return args + (['--no-progress'] if command in ('train', 'resume') else [])


def _replaced(args: list[str], option: str, value: str) -> list[str]:
    if option in args:
        index = args.index(option)
        return args[:index + 1] + [value] + args[index + 2:]
    return args + [option, value]


def _tidal_part(line: str) -> str:
    """The `tidal ...` command of a line: after `&&`, before a `#` comment."""
    line = line.split('&&')[-1].strip()
    return re.split(r'\s+#', line)[0].strip()


@pytest.fixture(scope='module')
def folders(tmp_path_factory):
    """One folder per page section, made on first use."""
    made: dict[tuple[str, str], Path] = {}

    def folder(command: Command, files: list[tuple[str, str]]) -> Path:
        key = (command.page, command.section)
        if key not in made:
            made[key] = tmp_path_factory.mktemp('section')
            for name, text in files:
                (made[key] / name).parent.mkdir(parents=True, exist_ok=True)
                (made[key] / name).write_text(text)
        return made[key]
    return folder


@pytest.fixture(scope='module')
def ran() -> set[int]:
    """The indices (in COMMANDS) of the commands run so far in this session."""
    return set()


def _test_ids() -> list[str]:
    """Each command's test id: its page and line's start, numbered as pytest numbers repeated ids (`_0`, `_1`)."""
    ids = [f'{command.page}:{command.line[:60]}' for command, _ in COMMANDS]
    repeats, seen = Counter(ids), Counter[str]()
    numbered = []
    for test_id in ids:
        numbered.append(f'{test_id}_{seen[test_id]}' if repeats[test_id] > 1 else test_id)
        seen[test_id] += 1
    return numbered


TEST_IDS = _test_ids()
SLOW_IDS = slow_test_ids()
NODE_PREFIX = f'{Path(__file__).relative_to(ROOT).as_posix()}::test_command_runs['  # a command's node id, to its id


def _is_slow(index: int) -> bool:
    return f'{NODE_PREFIX}{TEST_IDS[index]}]' in SLOW_IDS


def _earlier_in_section(index: int, slow: bool) -> list[int]:
    """The commands before COMMANDS[index] in its section that it may need, in page order: all of them for a slow
    command, the fast ones for a fast command (the README's test command never runs a slow command's work)."""
    command = COMMANDS[index][0]
    return [earlier for earlier in range(index)
            if (COMMANDS[earlier][0].page, COMMANDS[earlier][0].section) == (command.page, command.section)
            and (slow or not _is_slow(earlier))]


def test_the_pages_have_commands():
    assert len(COMMANDS) >= 30
    assert any(command.page == 'README.md' for command, _ in COMMANDS)  # the front page's quick start


def test_a_slow_command_is_known_by_its_test_id():
    slow = [index for index in range(len(COMMANDS)) if _is_slow(index)]
    listed = [node for node in SLOW_IDS if node.startswith(NODE_PREFIX)]
    assert len(slow) == len(listed) > 0


@pytest.mark.parametrize('index', range(len(COMMANDS)), ids=TEST_IDS)
def test_command_runs(index, folders, ran, monkeypatch, capsys, request):
    """The command runs, after its section's earlier commands that this session has not run (a slow command run on
    its own, or in the slow set, finds the run its section trained before it)."""
    for earlier in _earlier_in_section(index, request.node.get_closest_marker('slow') is not None):
        if earlier not in ran:
            _run(*COMMANDS[earlier], folders, monkeypatch, capsys)
            ran.add(earlier)
    reason = _run(*COMMANDS[index], folders, monkeypatch, capsys)
    ran.add(index)
    if reason is not None:
        pytest.skip(reason)


def _run(command: Command, files: list[tuple[str, str]], folders, monkeypatch, capsys) -> str | None:
    """Runs one command in its section's folder, as the page shows it; returns why it does not run here, if so."""
    line = command.line
    if PLACEHOLDER.search(_tidal_part(line).replace('tidal: ', '')) and command.expected is None:
        # a usage synopsis: its subcommand is real (the -m form's mode too)
        words = _tidal_part(line).split()
        assert main([words[1], '--help'] if words[1] != '-m' else ['-m', 'serial', '--help']) == 0
        return None
    reason = _skip_reason(line)
    if reason is not None:
        return reason
    monkeypatch.chdir(folders(command, files))
    # Minari's root as docs/datasets.md sets it (export MINARI_DATASETS_PATH=$PWD/datasets), never ~/.minari
    monkeypatch.setenv('MINARI_DATASETS_PATH', str(Path.cwd() / 'datasets'))
    text = _tidal_part(line)
    output = None
    if '>' in shlex.split(text):
        text, output = (part.strip() for part in text.split('>', 1))
    args = _shrunk(shlex.split(text)[1:])
    if command.expected is not None:
        capsys.readouterr()
        assert main(shlex.split(text)[1:]) == 2
        assert capsys.readouterr().err == command.expected + '\n'
        return None
    if 'collector.type=ray' in text:  # Ray workers import tidal in their own processes: run it as a user would
        done = subprocess.run([sys.executable, '-m', 'tidal', *args], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return None
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, f'{line}\n{captured.err[-3000:]}'
    if output is not None:
        Path(output).write_text(captured.out)
        assert Path(output).stat().st_size > 0
    return None
