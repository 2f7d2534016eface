"""Reliability suite: counts failures per category when tidal is given bad input or bad luck.

It tests a tidal source tree (`--src`) from the outside: every case runs `python -m tidal ...` with
`PYTHONPATH=<src>` in a fresh working folder and is judged by its exit code, its stderr and its timing.

Categories (`--only NAME`):
  config      > 300 mutated configs and CLI flags (pendulum_sac, some cartpole_discrete_sac, pendulum_taac)
  kill        SIGKILL at a random moment, `tidal resume`, compare with an uninterrupted run (`--kills N`)
  faulty_env  envs that return a NaN observation or reward, or raise, at step 50
  checkpoint  a pickle that runs code on load, a flipped byte in a tensor, truncated files
  disk        full disk (ENOSPC) and read-only run folder (EROFS), simulated inside the process
  run_end     whether a finished `tidal train` says in its last stdout line why it ended and where

Outcomes of one case:
  error      exit != 0, stderr's last non-empty line starts with `tidal: error:` (or argparse's
             `tidal <command>: error:`), and no 'Traceback' in stderr: the clean way to refuse
  traceback  'Traceback' in stderr
  hang       still running at the timeout (killed)
  crash      killed by a signal the suite did not send, or exit != 0 with neither of the above
  accepted   exit 0

Writes `results.json` (counts and every case) and `table.md` into `--out`.

    python benchmarks/reliability.py --src PATH --out DIR [--only CATEGORY] [--kills 20]

Speed. The config cases run as forks of a server that has imported tidal once (reliability/forkrunner.py;
`--no-fork` runs them as plain subprocesses): a config error then costs 0.1 s instead of 3-4 s of
interpreter start. On 27 cases of every outcome, forked and plain runs gave the same outcomes, exit codes
and messages. Each config case trains 150 env steps (100 random, 50 updates) and counts as a hang after
30 s (its accepted runs take 1-10 s); the kill-and-resume runs use 32-unit networks and batches of 32, so
that the 3000-step run of the brief takes about 10 s. The other categories use plain subprocesses.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pickle
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

BENCH_DIR = Path(os.path.abspath(__file__)).parent
HELPERS = BENCH_DIR / 'reliability'
CATEGORIES = ('config', 'kill', 'faulty_env', 'checkpoint', 'disk', 'run_end')
ERROR_LINE = re.compile(r'^tidal(?: [\w-]+)?: error:')

# the small budget every config case trains with (see --config-steps)
CONFIG_BASE_SETS = ('policy.random_collect_size=100', 'policy.learn.learner.save_ckpt_freq=1000000')
# kill-and-resume: the run of the brief, with small networks so that 20 kills fit in minutes
KILL_STEPS, KILL_RANDOM = 3000, 500
KILL_SMALL_NETS = ('policy.learn.batch_size=32', 'policy.model.actor_hidden_sizes=[32,32]',
                   'policy.model.critic_hidden_sizes=[32,32]')


# =============================================================================== running cases

@dataclass
class Result:
    rc: Optional[int]
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    outcome: str = ''

    def last_err_line(self) -> str:
        return last_line(self.stderr)

    def last_out_line(self) -> str:
        return last_line(self.stdout)


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ''


def classify(rc: Optional[int], timed_out: bool, stderr: str) -> str:
    if timed_out:
        return 'hang'
    if 'Traceback' in stderr:
        return 'traceback'
    if rc == 0:
        return 'accepted'
    if rc is not None and rc > 0 and ERROR_LINE.match(last_line(stderr)):
        return 'error'
    return 'crash'


class Runner:
    """Starts tidal processes for the suite: plain subprocesses, or children of a warm fork server."""

    def __init__(self, src: Path, work: Path, fork: bool) -> None:
        self.src, self.work, self.fork = src, work, fork
        self._server: Optional[subprocess.Popen] = None
        self._count = 0

    def env(self, extra_path: Iterable[Path] = ()) -> dict[str, str]:
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join([str(self.src)] + [str(p) for p in extra_path])
        env['MPLBACKEND'] = 'Agg'
        env.pop('PYTHONSTARTUP', None)
        return env

    def case_dir(self, name: str) -> Path:
        path = self.work / name
        if path.exists():
            shutil.rmtree(path)
        (path / 'run').mkdir(parents=True)
        return path

    # ----- one process ------------------------------------------------------------------------
    def tidal(self, argv: list[str], case: Path, timeout: float, fast: bool = False,
              mem_gb: float = 8.0) -> Result:
        """`python -m tidal argv` in `case/run`; `fast` uses the fork server when it is enabled."""
        cwd, out, err = case / 'run', case / 'stdout.txt', case / 'stderr.txt'
        if fast and self.fork:
            answer = self._fork_run(dict(argv=argv, cwd=str(cwd), stdout=str(out), stderr=str(err),
                                         timeout=timeout, mem_gb=mem_gb))
            rc, timed_out, seconds = answer['rc'], answer['timed_out'], answer['seconds']
        else:
            rc, timed_out, seconds = self._spawn([sys.executable, '-m', 'tidal', *argv], cwd, out, err, timeout,
                                                 self.env(), mem_gb)
        res = Result(rc, timed_out, seconds, read_text(out), read_text(err))
        res.outcome = classify(rc, timed_out, res.stderr)
        return res

    def script(self, cmd: list[str], case: Path, timeout: float, extra_path: Iterable[Path] = (),
               env_extra: Optional[dict] = None) -> Result:
        cwd, out, err = case / 'run', case / 'stdout.txt', case / 'stderr.txt'
        env = self.env(extra_path)
        env.update(env_extra or {})
        rc, timed_out, seconds = self._spawn(cmd, cwd, out, err, timeout, env, 8.0)
        res = Result(rc, timed_out, seconds, read_text(out), read_text(err))
        res.outcome = classify(rc, timed_out, res.stderr)
        return res

    def start(self, cmd: list[str], case: Path, env: Optional[dict] = None, tag: str = '') -> subprocess.Popen:
        """A process to be killed by the caller (kill-and-resume); output files `stdout<tag>.txt`."""
        out = open(case / f'stdout{tag}.txt', 'wb')
        err = open(case / f'stderr{tag}.txt', 'wb')
        try:
            return subprocess.Popen(cmd, cwd=case / 'run', stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    env=env or self.env(), start_new_session=True)
        finally:
            out.close()
            err.close()

    @staticmethod
    def _spawn(cmd, cwd, out, err, timeout, env, mem_gb) -> tuple[Optional[int], bool, float]:
        def limit_memory() -> None:
            import resource
            limit = int(mem_gb * 2 ** 30)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        start = time.perf_counter()
        with open(out, 'wb') as fout, open(err, 'wb') as ferr:
            proc = subprocess.Popen(cmd, cwd=cwd, stdout=fout, stderr=ferr, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True, preexec_fn=limit_memory)
            try:
                rc = proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                kill_group(proc.pid)
                proc.wait()
                rc, timed_out = None, True
        kill_group(proc.pid)
        return rc, timed_out, round(time.perf_counter() - start, 3)

    # ----- fork server ------------------------------------------------------------------------
    def _fork_run(self, request: dict) -> dict:
        for attempt in range(2):
            server = self._server_proc()
            try:
                server.stdin.write(json.dumps(request) + '\n')
                server.stdin.flush()
                line = server.stdout.readline()
                if line:
                    return json.loads(line)
            except (BrokenPipeError, OSError):
                pass
            self.close()
        raise RuntimeError('the fork server died twice in a row')

    def _server_proc(self) -> subprocess.Popen:
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen(
                [sys.executable, str(HELPERS / 'forkrunner.py')], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, env=self.env(), cwd=self.work)
            ready = self._server.stdout.readline()
            if not ready:
                raise RuntimeError('the fork server did not start')
        return self._server

    def close(self) -> None:
        if self._server is not None:
            try:
                self._server.stdin.close()
                self._server.wait(timeout=10)
            except Exception:
                self._server.kill()
            self._server = None


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_text(path: Path) -> str:
    try:
        return Path(path).read_bytes().decode('utf-8', errors='replace')
    except FileNotFoundError:
        return ''


def run_dirs(root: Path) -> list[Path]:
    """Run folders (holding config.yaml) directly in `root` or one level below."""
    found = [p.parent for p in root.glob('*/config.yaml')] + [p.parent for p in root.glob('*/*/config.yaml')]
    return sorted(set(found))


def leftover_tmp(root: Path) -> list[str]:
    hits = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith('.tmp') or '.tmp.' in name or name.startswith('tmp'):
                hits.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(hits)


# =============================================================================== checkpoints

def load_ckpt(path: Path) -> Any:
    import torch
    return torch.load(path, map_location='cpu', weights_only=False)


def unwrap(ckpt: Any) -> Any:
    """The state of a checkpoint in either layout: bare dict, or {'format': 'tidal-checkpoint', 'state': ...}."""
    if isinstance(ckpt, dict) and ckpt.get('format') == 'tidal-checkpoint' and 'state' in ckpt:
        return ckpt['state']
    return ckpt


def tensors(tree: Any, prefix: str = '') -> dict[str, Any]:
    """Every tensor in a nested dict / list, by path."""
    import torch
    found: dict[str, Any] = {}
    if isinstance(tree, torch.Tensor):
        found[prefix] = tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            found.update(tensors(value, f'{prefix}/{key}'))
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            found.update(tensors(value, f'{prefix}/{i}'))
    return found


def policy_tensors(path: Path) -> dict[str, Any]:
    state = unwrap(load_ckpt(path))
    return tensors(state.get('policy', state) if isinstance(state, dict) else state)


def all_finite(path: Path) -> Optional[bool]:
    import torch
    try:
        found = policy_tensors(path)
    except Exception:
        return None
    return all(bool(torch.isfinite(t).all()) for t in found.values() if t.is_floating_point())


def compare_weights(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Bit-identity of two policy states and the relative L2 distance of their float tensors."""
    import torch
    identical = a.keys() == b.keys()
    diff2, norm2 = 0.0, 0.0
    for key in sorted(set(a) & set(b)):
        x, y = a[key], b[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            identical = False
            continue
        if not torch.equal(x, y):
            identical = False
        if x.is_floating_point():
            diff2 += float(((x.double() - y.double()) ** 2).sum())
            norm2 += float((y.double() ** 2).sum())
    rel = math.sqrt(diff2 / norm2) if norm2 > 0 else (0.0 if diff2 == 0 else math.inf)
    return {'identical': identical, 'rel_l2': rel}


# =============================================================================== sanitizing

class Cleaner:
    """Replaces this machine's paths in stored messages by placeholders."""

    def __init__(self, pairs: list[tuple[Path, str]]) -> None:
        items = []
        for path, label in pairs:
            for form in {str(path), os.path.realpath(path)}:
                items.append((form, label))
        self.pairs = sorted(items, key=lambda item: -len(item[0]))

    def __call__(self, text: str, limit: int = 400) -> str:
        for path, label in self.pairs:
            text = text.replace(path, label)
        text = re.sub(r'/tmp/[\w.-]+', '<tmp>', text)
        text = re.sub(r'(tfevents)\.\d+\.[\w.-]+', r'\1.<time>.<host>', text)
        return text if len(text) <= limit else text[:limit] + '...'


# =============================================================================== 1. bad configs

@dataclass
class Dom:
    """The range a key's value is expected to have; anything else is expected to be refused."""
    kind: str                   # 'int', 'float', 'bool', 'list', 'str'
    lo: Optional[float] = None
    lo_open: bool = False       # True: lo itself is out of range
    hi: Optional[float] = None
    hi_open: bool = False
    huge_ok: bool = True        # 10**12 is a sensible value (a period or threshold, not a count of things)
    exact: Any = None           # the only valid value (shapes fixed by the env)
    why: str = ''


COUNT = dict(lo=1, huge_ok=False)                 # things held in memory or work done per step
PERIOD = dict(lo=1, huge_ok=True)                 # every N iterations: 10**12 just means never
UNIT = dict(lo=0.0, hi=1.0)
DOMAINS: dict[str, Dom] = {
    'seed': Dom('int', lo=0, hi=2 ** 64 - 1, why='seeds are unsigned 64-bit'),
    'torch_threads': Dom('int', lo=0, huge_ok=False, why='0 = torch default; a thread count'),
    'env.collector_env_num': Dom('int', lo=1, hi=10 ** 4, huge_ok=False, why='live env objects'),
    'env.evaluator_env_num': Dom('int', lo=1, hi=10 ** 4, huge_ok=False, why='live env objects'),
    'env.n_evaluator_episode': Dom('int', **COUNT, why='episodes per evaluation'),
    'env.stop_value': Dom('float', why='any finite return (or None)'),
    'policy.random_collect_size': Dom('int', lo=0, huge_ok=True, why='0 = no warm-up; the budget caps it'),
    'policy.model.obs_shape': Dom('int', exact=None, why='must match the env'),
    'policy.model.action_shape': Dom('int', exact=None, why='must match the env'),
    'policy.learn.learner.save_ckpt_secs': Dom('float', lo=0.0, lo_open=True, why='a period in seconds'),
    'policy.learn.switch_target_entropy': Dom('float', lo=0.0, hi=0.6932, huge_ok=False,
                                              why="a two-way switch's entropy lies in [0, ln 2]"),
    'policy.learn.update_per_collect': Dom('int', **COUNT, why='updates per collect; 0 never learns'),
    'policy.learn.batch_size': Dom('int', **COUNT, why='memory per update'),
    'policy.learn.learner.log_freq': Dom('int', **PERIOD),
    'policy.learn.learner.save_ckpt_freq': Dom('int', **PERIOD),
    'policy.learn.learning_rate_q': Dom('float', lo=0.0, lo_open=True, why='a step size > 0'),
    'policy.learn.learning_rate_policy': Dom('float', lo=0.0, lo_open=True, why='a step size > 0'),
    'policy.learn.learning_rate_alpha': Dom('float', lo=0.0, lo_open=True, why='a step size > 0'),
    'policy.learn.target_theta': Dom('float', lo=0.0, lo_open=True, hi=1.0, why='Polyak factor in (0, 1]'),
    'policy.learn.discount_factor': Dom('float', **UNIT, why='gamma in [0, 1]'),
    'policy.learn.alpha': Dom('float', lo=0.0, lo_open=True,
                              why='> 0 while auto_alpha tunes log(alpha); 0 only with auto_alpha=False'),
    'policy.learn.switch_alpha': Dom('float', lo=0.0, lo_open=True, why='a temperature; b ~ exp(Q / switch_alpha)'),
    'policy.learn.target_entropy': Dom('float', why='any finite entropy (or None)'),
    'policy.learn.switch_target_entropy': Dom('float', why='any finite entropy (or None)'),
    'policy.learn.init_w': Dom('float', lo=0.0, why='a half-width >= 0'),
    'policy.collect.n_sample': Dom('int', **COUNT, why='env steps per collect'),
    'policy.collect.unroll_len': Dom('int', **COUNT, why='steps per sample'),
    'policy.eval.evaluator.eval_freq': Dom('int', **PERIOD),
    'policy.eval.epsilon_greedy': Dom('float', **UNIT, why='a probability'),
    'policy.trajectory.max_repeat_steps': Dom('int', lo=0, huge_ok=True, why='0 = no limit'),
    'policy.other.replay_buffer.replay_buffer_size': Dom('int', **COUNT, why='preallocated memory'),
    'policy.other.replay_buffer.alpha': Dom('float', **UNIT, why='priority exponent in [0, 1]'),
    'policy.other.replay_buffer.beta': Dom('float', **UNIT, why='importance-sampling exponent in [0, 1]'),
    'policy.other.replay_buffer.anneal_step': Dom('int', lo=0, huge_ok=True, why='0 = fixed beta'),
}
# true where it contradicts the algorithm or this machine
BOOL_TRUE_INVALID = {
    'policy.on_policy': 'SAC-family policies are off-policy',
    'policy.priority_IS_weight': 'importance weights need priority=True',
    'policy.cuda': 'no CUDA device on this machine',
}

RULES = {
    'type': 'wrong type: a string, list or bool where a number is declared, a number where a list or bool is',
    'finite': 'NaN or +-inf',
    'range': "outside the key's range (DOMAINS in the suite: counts > 0, probabilities in [0, 1], "
             "learning rates > 0, target_theta in (0, 1], seed in [0, 2**64), ...)",
    'size': '10**12 (or 10**5 envs) for a count of things held in memory or work per step',
    'env': 'a shape that contradicts the env',
    'contradiction': 'a flag that contradicts the algorithm or the machine',
    'file': 'an unreadable config file (not UTF-8, bad YAML/JSON syntax)',
    'cli': 'a negative or zero budget, negative episodes, a seed outside [0, 2**64)',
    'ckpt': 'a checkpoint whose shapes do not fit the config',
    'valid': 'expected to run: a value inside its range, of its type',
    'generic': 'key not in DOMAINS: counts > 0 assumed for ints, any finite value for floats',
}


@dataclass
class Mutation:
    id: str
    desc: str
    argv: list[str]
    expect_error: bool
    rule: str
    files: dict[str, bytes] = field(default_factory=dict)
    base: bool = True   # prepend the small budget


def parse_config_show(text: str) -> list[tuple[str, str, Any]]:
    """(dotted key, declared type, value) for every leaf of `tidal config show` output."""
    import yaml
    leaves, stack, pending = [], [], None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(' '))
        line = raw.strip()
        if line.startswith('#'):
            match = re.match(r'#\s*\(([\w\[\], ]+?)[\s)><=]', line)
            if match and pending is None:
                pending = match.group(1).strip()
            continue
        match = re.match(r'([\w-]+):\s*(.*)$', line)
        if not match:
            pending = None
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key, rest = match.group(1), match.group(2)
        # show prints the main_config / create_config layout; a --set key is the path below the entry
        path = '.'.join([k for _, k in stack][1:] + [key])
        if rest == '':
            stack.append((indent, key))
        else:
            try:
                value = yaml.safe_load(rest)
            except yaml.YAMLError:
                value = rest
            declared = pending or type(value).__name__
            leaves.append((path, declared, value))
        pending = None
    return leaves


def kind_of(declared: str, value: Any) -> str:
    declared = declared.lower()
    if declared.startswith('list') or isinstance(value, list):
        return 'list'
    if declared == 'bool' or isinstance(value, bool):
        return 'bool'
    if declared == 'int':
        return 'int'
    if declared == 'float':
        return 'float'
    if declared == 'str' or isinstance(value, str):
        return 'str'
    if isinstance(value, int):
        return 'int'
    if isinstance(value, float):
        return 'float'
    return 'other'


def numeric_expectation(key: str, kind: str, value: Any, label: str, defaults: dict[str, Any]) -> tuple[bool, str]:
    """Whether `value` (already parsed as tidal's `--set` would) is expected to be refused, and why."""
    if key in ('policy.model.obs_shape', 'policy.model.action_shape') and value == [defaults.get(key)]:
        return False, 'valid'  # a one-dimensional shape written as a list is the same shape
    if isinstance(value, (str, list)) or isinstance(value, bool):
        return True, 'type'
    if kind == 'int' and isinstance(value, float) and not value.is_integer():
        return True, 'type'
    if isinstance(value, float) and not math.isfinite(value):
        return True, 'finite'
    dom = DOMAINS.get(key)
    if dom is None:
        if kind == 'int' and value < 1:
            return True, 'generic'
        return False, 'generic'
    if key in ('policy.model.obs_shape', 'policy.model.action_shape'):
        return (value != defaults.get(key)), 'env'
    if abs(value) >= 1e12 and not dom.huge_ok:
        return True, 'size'
    if dom.lo is not None and (value < dom.lo or (dom.lo_open and value == dom.lo)):
        return True, 'range'
    if dom.hi is not None and (value > dom.hi or (dom.hi_open and value == dom.hi)):
        return True, 'size' if label == 'envs' else 'range'
    return False, 'valid'


NUMERIC_VALUES = ('0', '-1', 'huge', 'nan', 'inf', '-inf', 'abc', '[1]', 'true')


def value_text(label: str, kind: str) -> tuple[str, Any]:
    """The `--set` text of a mutation value and the value tidal's parser should make of it."""
    if label == 'huge':
        return ('1000000000000', 10 ** 12) if kind == 'int' else ('1e12', 1e12)
    parsed = {'0': 0, '-1': -1, 'nan': float('nan'), 'inf': float('inf'), '-inf': float('-inf'), 'abc': 'abc',
              '[1]': [1], 'true': True}[label]
    return label, parsed


def build_mutations(keys: dict[str, list[tuple[str, str, Any]]], fixtures: dict[str, Path],
                    has_cuda: bool) -> list[Mutation]:
    muts: list[Mutation] = []

    def add(desc: str, argv: list[str], expect: bool, rule: str, **kw: Any) -> None:
        muts.append(Mutation(f'c{len(muts) + 1:03d}', desc, argv, expect, rule, **kw))

    def mutate_key(config: str, key: str, declared: str, default: Any, labels: Iterable[str],
                   defaults: dict[str, Any]) -> None:
        kind = kind_of(declared, default)
        if kind in ('int', 'float') or (kind == 'other' and default is None and declared in ('int', 'float')):
            for label in labels:
                text, parsed = value_text(label, kind)
                expect, rule = numeric_expectation(key, kind, parsed, label, defaults)
                add(f'{config}: {key}={text}', [config, '--set', f'{key}={text}'], expect, rule)
        elif kind == 'bool':
            why = BOOL_TRUE_INVALID.get(key)
            if key == 'policy.cuda' and has_cuda:
                why = None
            add(f'{config}: {key}=yes', [config, '--set', f'{key}=yes'], why is not None,
                'contradiction' if why else 'valid')
            add(f'{config}: {key}=2', [config, '--set', f'{key}=2'], True, 'type')
        elif kind == 'list':
            add(f'{config}: {key}=5', [config, '--set', f'{key}=5'], True, 'type')

    # ---- every key of pendulum_sac
    sac_keys = keys['pendulum_sac']
    sac_defaults = {k: v for k, _, v in sac_keys}
    for key, declared, default in sac_keys:
        mutate_key('pendulum_sac', key, declared, default, NUMERIC_VALUES, sac_defaults)

    # ---- the brief's out-of-range values and CLI flags
    sac = 'pendulum_sac'
    add('discount_factor=1.5', [sac, '--set', 'policy.learn.discount_factor=1.5'], True, 'range')
    add('target_theta=2', [sac, '--set', 'policy.learn.target_theta=2'], True, 'range')
    add('collector_env_num=10**5', [sac, '--set', 'env.collector_env_num=100000'], True, 'size')
    add('evaluator_env_num=10**5', [sac, '--set', 'env.evaluator_env_num=100000'], True, 'size')
    add('-s -1', [sac, '-s', '-1'], True, 'cli')
    add('-s 2**70', [sac, '-s', str(2 ** 70)], True, 'cli')
    add('--max-env-step -5', [sac, '--max-env-step', '-5'], True, 'cli')
    add('--max-env-step 0', [sac, '--max-env-step', '0'], True, 'cli')
    add('policy.model.obs_shape=4', [sac, '--set', 'policy.model.obs_shape=4'], True, 'env')
    add('policy.model.action_shape=3', [sac, '--set', 'policy.model.action_shape=3'], True, 'env')
    add('env.env_kwargs.g=abc', [sac, '--set', 'env.env_kwargs.g=abc'], True, 'type')
    add('env.stop_value=abc', [sac, '--set', 'env.stop_value=abc'], True, 'type')
    add('env.env_id=NoSuchEnv-v1', [sac, '--set', 'env.env_id=NoSuchEnv-v1'], True, 'type')
    add('policy.device=tpu', [sac, '--set', 'policy.device=tpu'], True, 'type')
    add('env_manager.type=nope', [sac, '--set', 'env_manager.type=nope'], True, 'type')
    # valid alternatives that must run
    add('alpha=0 with auto_alpha=False', [sac, '--set', 'policy.learn.alpha=0', '--set',
                                          'policy.learn.auto_alpha=False'], False, 'valid')
    add('discount_factor=1', [sac, '--set', 'policy.learn.discount_factor=1'], False, 'valid')
    add('target_theta=1', [sac, '--set', 'policy.learn.target_theta=1'], False, 'valid')
    add('priority=True with IS weights', [sac, '--set', 'policy.priority=True', '--set',
                                          'policy.priority_IS_weight=True'], False, 'valid')
    add('collector_env_num=2, n_sample=2', [sac, '--set', 'env.collector_env_num=2', '--set',
                                            'policy.collect.n_sample=2'], False, 'valid')
    # config files
    sac_yaml = (f"main_config:\n  exp_name: from_file\n  env:\n    env_id: Pendulum-v1\n"
                f"  policy:\n    random_collect_size: 100\n"
                f"create_config:\n  env: {{type: gym}}\n  env_manager: {{type: base}}\n  policy: {{type: sac}}\n")
    add('config file (YAML) with a non-UTF-8 byte', ['bad_utf8.yaml'], True, 'file',
        files={'bad_utf8.yaml': b'# caf\xe9 \xff\xfe\n' + sac_yaml.encode()})
    add('config file (.py) with a non-UTF-8 byte', ['bad_utf8.py'], True, 'file',
        files={'bad_utf8.py': b'# caf\xe9 \xff\xfe\nmain_config = dict(env=dict(env_id="Pendulum-v1"))\n'
                              b'create_config = dict(env=dict(type="gym"), policy=dict(type="sac"))\n'})
    add('config file with invalid YAML syntax', ['bad_syntax.yaml'], True, 'file',
        files={'bad_syntax.yaml': b'main_config:\n  env: {env_id: Pendulum-v1\n  policy: [\ncreate_config: :\n'})
    add('config file with invalid JSON syntax', ['bad_syntax.json'], True, 'file',
        files={'bad_syntax.json': b'{"main_config": {"env": {"env_id": "Pendulum-v1"}, }'})
    add('config file (YAML) that is valid', ['good.yaml'], False, 'valid', files={'good.yaml': sac_yaml.encode()})
    # tidal eval
    ckpt = str(fixtures['default'])
    add('eval --episodes -1', ['eval', sac, '--ckpt', ckpt, '--episodes', '-1'], True, 'cli', base=False)
    add('eval --episodes 0', ['eval', sac, '--ckpt', ckpt, '--episodes', '0'], True, 'cli', base=False)
    add('eval --episodes 2 (valid)', ['eval', sac, '--ckpt', ckpt, '--episodes', '2'], False, 'valid', base=False)
    add('eval with a checkpoint trained with hidden sizes [64, 64]',
        ['eval', sac, '--ckpt', str(fixtures['hidden64']), '--episodes', '1'], True, 'ckpt', base=False)

    # ---- some keys of cartpole_discrete_sac (discrete actions)
    cart_keys = {k: (d, v) for k, d, v in keys['cartpole_discrete_sac']}
    cart_defaults = {k: v for k, (_, v) in cart_keys.items()}
    for key in ('policy.learn.target_entropy', 'policy.learn.alpha', 'policy.learn.discount_factor',
                'policy.learn.batch_size', 'policy.collect.n_sample', 'policy.model.action_shape',
                'policy.learn.learning_rate_q', 'env.n_evaluator_episode'):
        if key in cart_keys:
            declared, default = cart_keys[key]
            mutate_key('cartpole_discrete_sac', key, declared, default,
                       ('0', '-1', 'huge', 'nan', 'inf', 'abc'), cart_defaults)

    # ---- the keys pendulum_taac has beyond SAC's, and its sequence length
    taac_keys = keys['pendulum_taac']
    taac_defaults = {k: v for k, _, v in taac_keys}
    for key, declared, default in taac_keys:
        if key in sac_defaults and key != 'policy.collect.unroll_len':
            continue
        mutate_key('pendulum_taac', key, declared, default, NUMERIC_VALUES, taac_defaults)
    add('pendulum_taac: switch_advantage_clip=[1, -1]',
        ['pendulum_taac', '--set', 'policy.learn.switch_advantage_clip=[1,-1]'], True, 'range')
    add('pendulum_taac: switch_advantage_clip=[-1, 1] (valid)',
        ['pendulum_taac', '--set', 'policy.learn.switch_advantage_clip=[-1,1]'], False, 'valid')
    return muts


def train_argv(mutation: Mutation, steps: int) -> list[str]:
    if not mutation.base:
        return list(mutation.argv)
    argv = ['train', mutation.argv[0], '--max-env-step', str(steps), '--no-progress']
    for item in CONFIG_BASE_SETS:
        argv += ['--set', item]
    return argv + mutation.argv[1:]  # later flags win: a mutation may override the budget


def make_fixtures(runner: Runner, root: Path, clean: Cleaner) -> dict[str, Path]:
    """Checkpoints for the eval cases: pendulum_sac as zoo'd, and one trained with 64-unit layers."""
    out: dict[str, Path] = {}
    for name, extra in (('default', []), ('hidden64', ['--set', 'policy.model.actor_hidden_sizes=[64,64]',
                                                        '--set', 'policy.model.critic_hidden_sizes=[64,64]'])):
        case = runner.case_dir(f'fixtures/{name}')
        argv = ['train', 'pendulum_sac', '--max-env-step', '150', '--no-progress', '--exp-name', 'fixture',
                '--set', 'policy.random_collect_size=100'] + extra
        res = runner.tidal(argv, case, timeout=120, fast=True)
        ckpt = case / 'run' / 'fixture' / 'ckpt' / 'best.pt'
        if not ckpt.is_file():
            raise RuntimeError(f'fixture run {name} failed: {clean(res.last_err_line())}')
        out[name] = ckpt
    return out


def category_config(runner: Runner, args: argparse.Namespace, clean: Cleaner) -> dict:
    keys = {}
    for config in ('pendulum_sac', 'cartpole_discrete_sac', 'pendulum_taac'):
        res = runner.tidal(['config', 'show', config], runner.case_dir(f'config/show_{config}'), 60, fast=True)
        if res.rc != 0:
            raise RuntimeError(f'`tidal config show {config}` failed: {clean(res.last_err_line())}')
        keys[config] = parse_config_show(res.stdout)
    fixtures = make_fixtures(runner, runner.work, clean)
    has_cuda = _has_cuda()
    muts = build_mutations(keys, fixtures, has_cuda)
    if args.cases:
        wanted = set(args.cases.split(','))
        muts = [m for m in muts if m.id in wanted]
    if args.limit:
        muts = muts[:args.limit]
    cases = []
    start = time.perf_counter()
    for i, mut in enumerate(muts):
        case = runner.case_dir(f'config/{mut.id}')
        for name, data in mut.files.items():
            (case / 'run' / name).write_bytes(data)
        argv = train_argv(mut, args.config_steps)
        res = runner.tidal(argv, case, timeout=args.config_timeout, fast=True)
        row = dict(id=mut.id, desc=mut.desc, argv=[clean(a) for a in argv], expect_error=mut.expect_error,
                   rule=mut.rule, outcome=res.outcome, rc=res.rc, seconds=res.seconds,
                   message=clean(res.last_err_line()))
        if res.outcome == 'accepted' and argv[0] == 'train':
            dirs = run_dirs(case / 'run')
            latest = [d / 'ckpt' / 'latest.pt' for d in dirs if (d / 'ckpt' / 'latest.pt').is_file()]
            row['weights_finite'] = all_finite(latest[0]) if latest else None
            row['last_stdout'] = clean(res.last_out_line())
            row['run_end_named'] = run_end_named(res.stdout, dirs)
        cases.append(row)
        progress(f'config {i + 1}/{len(muts)} {mut.id} {res.outcome:9s} {res.seconds:6.1f}s  {mut.desc}')
        if not args.keep_work:
            shutil.rmtree(case, ignore_errors=True)
    wall = time.perf_counter() - start
    counts = config_counts(cases)
    return dict(counts=counts, wall_seconds=round(wall, 1), budget_env_steps=args.config_steps,
                timeout_s=args.config_timeout, n_cases=len(cases), rules=RULES, cases=cases)


def config_counts(cases: list[dict]) -> dict[str, int]:
    c = Counter()
    for row in cases:
        outcome, expect = row['outcome'], row['expect_error']
        c['cases'] += 1
        c['expected_error'] += expect
        c[outcome] += 1
        if outcome == 'accepted':
            if expect:
                c['nonsense_accepted'] += 1
            else:
                c['valid_accepted'] += 1
            if row.get('weights_finite') is False:
                c['accepted_nonfinite_weights'] += 1
        elif outcome == 'error':
            c['clean_error'] += 1
            if expect:
                c['clean_error_expected'] += 1
            else:
                c['valid_rejected'] += 1
    order = ('cases', 'expected_error', 'traceback', 'hang', 'crash', 'nonsense_accepted',
             'accepted_nonfinite_weights', 'clean_error', 'clean_error_expected', 'valid_rejected',
             'valid_accepted')
    return {k: int(c.get(k, 0)) for k in order}


def _has_cuda() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:
        return False


# =============================================================================== 2. kill and resume

def kill_train_argv() -> list[str]:
    argv = ['train', 'pendulum_sac', '--max-env-step', str(KILL_STEPS), '--set',
            f'policy.random_collect_size={KILL_RANDOM}', '-s', '0', '--exp-name', 'ref', '--no-progress']
    for item in KILL_SMALL_NETS:
        argv += ['--set', item]
    return argv


def continue_argv(run_dir: Path) -> list[str]:
    """How a user carries on after a kill: `tidal resume` the run folder, or, when the process was killed
    before it made one (still starting Python), `tidal train` again."""
    return ['resume', 'ref', '--no-progress'] if run_dir.is_dir() else kill_train_argv()


def read_evals(run_dir: Path) -> list[dict[str, str]]:
    path = run_dir / 'evals.csv'
    if not path.is_file():
        return []
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def eval_key(row: dict[str, str]) -> tuple:
    return (row.get('env_step'), row.get('train_iter'))


def event_points(run_dir: Path, reference: Optional[set] = None) -> dict[str, Any]:
    """Event files under log/: how many, how many of 0 bytes, scalar points, duplicated (tag, step) and,
    given the reference run's points, how many of those are missing."""
    files = sorted(p for p in (run_dir / 'log').rglob('*') if p.is_file()) if (run_dir / 'log').is_dir() else []
    points: list[tuple[str, int]] = []
    try:
        from tensorboardX.proto import event_pb2
    except Exception:
        event_pb2 = None
    for path in files:  # named by creation time, so in the order they were written
        data = path.read_bytes()
        i = 0
        while event_pb2 is not None and i + 12 <= len(data):
            (length,) = struct.unpack('<Q', data[i:i + 8])
            if i + 12 + length + 4 > len(data):
                break
            event = event_pb2.Event()
            try:
                event.ParseFromString(data[i + 12:i + 12 + length])
            except Exception:
                break
            if event.HasField('session_log') and event.session_log.status == event.session_log.START:
                # a resumed writer's purge_step: TensorBoard drops the earlier points from this step on
                points = [point for point in points if point[1] < event.step]
            for value in event.summary.value:
                points.append((value.tag, int(event.step)))
            i += 12 + length + 4
    found = dict(files=len(files), empty_files=sum(1 for p in files if p.stat().st_size == 0),
                 points=len(points), duplicated_points=len(points) - len(set(points)))
    if reference is not None:
        found['missing_points'] = len(reference - set(points))
    else:
        found['point_set'] = set(points)
    return found


def run_for(proc: subprocess.Popen, seconds: float) -> bool:
    """Wait up to `seconds`; SIGKILL the process group if it is still running. True if killed."""
    try:
        proc.wait(timeout=max(seconds, 0.0))
        return False
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.wait()
        return True


def category_kill(runner: Runner, args: argparse.Namespace, clean: Cleaner) -> dict:
    start = time.perf_counter()
    argv = kill_train_argv()
    cmd = [sys.executable, '-m', 'tidal', *argv]
    refs = []
    for r in range(2):  # two uninterrupted runs: the reference, and a check that it repeats
        case = runner.case_dir(f'kill/ref{r}')
        res = runner.tidal(argv, case, timeout=600)
        if res.rc != 0:
            raise RuntimeError(f'kill reference run failed: {clean(res.last_err_line())}')
        refs.append((case / 'run' / 'ref', res))
    ref_dir, ref_res = refs[0]
    # the machine is shared: the shorter of the two runs, so that a kill moment rarely falls after the end
    ref_wall = min(res.seconds for _, res in refs)
    ref_weights = policy_tensors(ref_dir / 'ckpt' / 'latest.pt')
    ref_evals = read_evals(ref_dir)
    ref_events = event_points(ref_dir)
    ref_points = ref_events.pop('point_set')
    repeat = compare_weights(policy_tensors(refs[1][0] / 'ckpt' / 'latest.pt'), ref_weights)
    ref_rows = [(eval_key(r), r.get('return_mean')) for r in ref_evals]
    repeat_evals = [(eval_key(r), r.get('return_mean')) for r in read_evals(refs[1][0])] == ref_rows
    progress(f'kill: reference {ref_wall:.1f}s, repeat identical={repeat["identical"]} evals={repeat_evals}')

    rng = random.Random(args.seed)
    cases = []
    for i in range(args.kills):
        # kill moments as fractions of the run: the first of the training run, the second (every third
        # case) of the resumed process, whose length is taken as the part of the reference left after
        # the first kill plus 3 s of start-up
        fractions = [rng.random()] + ([rng.random()] if i % 3 == 2 else [])
        kills = [round(fractions[0] * ref_wall, 2)]
        for attempt in range(2):
            case = runner.case_dir(f'kill/k{i:02d}')
            run_dir = case / 'run' / 'ref'
            proc = runner.start(cmd, case, tag='_0')
            started = time.perf_counter()
            killed = run_for(proc, kills[0])
            if killed or attempt == 1:
                break
            # this run was faster than the reference: the same fraction of its own length
            kills[0] = round(fractions[0] * (time.perf_counter() - started) * 0.98, 2)
        if len(fractions) > 1:
            kills.append(round(fractions[1] * (max(ref_wall - kills[0], 0.0) + 3.0), 2))
        row: dict[str, Any] = dict(id=f'k{i:02d}', kill_fraction=[round(f, 3) for f in fractions],
                                   kill_at_s=kills, killed=[killed], ckpt_at_kill=[])
        resumes = []
        for j in range(len(kills)):
            row['ckpt_at_kill'].append((run_dir / 'ckpt' / 'latest.pt').is_file())
            last = j == len(kills) - 1
            if not last:
                proc = runner.start([sys.executable, '-m', 'tidal', *continue_argv(run_dir)], case, tag=f'_r{j}')
                row['killed'].append(run_for(proc, kills[j + 1]))
                resumes.append(dict(rc=proc.returncode, killed=row['killed'][-1],
                                    message=clean(last_line(read_text(case / f'stderr_r{j}.txt')))))
        row['no_run_folder'] = not run_dir.is_dir()
        res = runner.tidal(continue_argv(run_dir), case, timeout=max(300, 6 * ref_wall))
        row.update(resume_outcome=res.outcome, resume_rc=res.rc, resume_seconds=res.seconds,
                   resume_message=clean(res.last_err_line()), resume_last_stdout=clean(res.last_out_line()),
                   intermediate_resumes=resumes)
        row['run_end_named'] = run_end_named(res.stdout, [run_dir]) if res.rc == 0 else None
        final = run_dir / 'ckpt' / 'latest.pt'
        if res.rc == 0 and final.is_file():
            try:
                cmp = compare_weights(policy_tensors(final), ref_weights)
            except Exception as err:  # an unreadable final checkpoint
                cmp = dict(identical=False, rel_l2=None, error=clean(str(err)))
            row.update(weights_identical=cmp['identical'], rel_l2=cmp['rel_l2'])
        evals = read_evals(run_dir)
        keys = [eval_key(r) for r in evals]
        row['eval_rows'] = len(evals)
        row['eval_duplicates'] = len(keys) - len(set(keys))
        row['evals_identical'] = [(eval_key(r), r.get('return_mean')) for r in evals] == ref_rows
        row['events'] = event_points(run_dir, ref_points) if run_dir.is_dir() else None
        cases.append(row)
        progress(f"kill {i + 1}/{args.kills}: kill at {kills} -> resume {res.outcome} "
                 f"weights identical={row.get('weights_identical')} evals identical={row['evals_identical']} "
                 f"dups={row['eval_duplicates']}")
        if not args.keep_work:
            shutil.rmtree(case, ignore_errors=True)
    c = Counter()
    for row in cases:
        c['cases'] += 1
        c['killed'] += bool(row['killed'][0])
        c['killed_twice'] += len(row['killed']) > 1 and all(row['killed'])
        c['killed_before_run_folder'] += bool(row.get('no_run_folder'))
        ok = row['resume_outcome'] == 'accepted'
        c['resumed_ok'] += ok
        c['failed_resumes'] += not ok
        c['failed_resume_traceback'] += row['resume_outcome'] == 'traceback'
        c['failed_resume_clean_error'] += row['resume_outcome'] == 'error'
        c['bit_identical_weights'] += bool(row.get('weights_identical'))
        c['identical_eval_rows'] += bool(row['evals_identical'])
        c['cases_with_duplicated_eval_rows'] += row['eval_duplicates'] > 0
        c['duplicated_eval_rows'] += row['eval_duplicates']
        events = row['events'] or {}
        c['empty_event_files'] += events.get('empty_files', 0)
        c['cases_with_duplicated_tb_points'] += events.get('duplicated_points', 0) > 0
        c['cases_with_missing_tb_points'] += events.get('missing_points', 0) > 0
    order = ('cases', 'killed', 'killed_twice', 'killed_before_run_folder', 'resumed_ok', 'bit_identical_weights', 'identical_eval_rows',
             'cases_with_duplicated_eval_rows', 'duplicated_eval_rows', 'empty_event_files',
             'cases_with_duplicated_tb_points', 'cases_with_missing_tb_points', 'failed_resumes',
             'failed_resume_clean_error',
             'failed_resume_traceback')
    counts = {k: int(c.get(k, 0)) for k in order}
    l2 = [row['rel_l2'] for row in cases if row.get('weights_identical') is False and row.get('rel_l2') is not None]
    messages = Counter(row['resume_message'] for row in cases if row['resume_outcome'] != 'accepted')
    return dict(counts=counts, wall_seconds=round(time.perf_counter() - start, 1),
                reference=dict(argv=argv, wall_seconds=ref_wall, repeat_identical=repeat['identical'],
                               repeat_rel_l2=repeat['rel_l2'], repeat_evals_identical=repeat_evals,
                               eval_rows=len(ref_evals), events=ref_events,
                               last_stdout=clean(ref_res.last_out_line()),
                               run_end_named=run_end_named(ref_res.stdout, [ref_dir])),
                rel_l2_when_different=dict(n=len(l2), min=min(l2) if l2 else None,
                                           median=sorted(l2)[len(l2) // 2] if l2 else None,
                                           max=max(l2) if l2 else None),
                failed_resume_messages=dict(messages), cases=cases)


# =============================================================================== 3. faulty envs

def category_faulty_env(runner: Runner, args: argparse.Namespace, clean: Cleaner) -> dict:
    sys.path.insert(0, str(HELPERS))
    from faulty_envs import FAULT_STEP, IDS
    start = time.perf_counter()
    cases = []
    for fault, env_id in IDS.items():
        for phase, warmup in (('warm-up', 100), ('learning', 20)):
            case = runner.case_dir(f'faulty/{fault}_{phase}')
            argv = ['train', 'pendulum_sac', '--import', 'faulty_envs', '--set', f'env.env_id={env_id}',
                    '--max-env-step', '300', '--no-progress', '--set', f'policy.random_collect_size={warmup}',
                    '--set', 'policy.learn.learner.save_ckpt_freq=1000000']
            res = runner.script([sys.executable, '-m', 'tidal', *argv], case, args.timeout, extra_path=[HELPERS])
            message = res.last_err_line()
            names_env = env_id in message
            names_step = re.search(rf'\b({FAULT_STEP - 1}|{FAULT_STEP}|{FAULT_STEP + 1})\b', message) is not None
            verdict = res.outcome
            if res.outcome == 'error':
                verdict = 'clean_named' if names_env and names_step else 'clean_unnamed'
            cases.append(dict(id=f'{fault}/{phase}', env_id=env_id, fault=fault, fault_step=FAULT_STEP,
                              random_collect_size=warmup, outcome=res.outcome, verdict=verdict, rc=res.rc,
                              seconds=res.seconds, names_env_id=names_env, names_step=names_step,
                              stderr_lines=len([ln for ln in res.stderr.splitlines() if ln.strip()]),
                              message=clean(message)))
            progress(f'faulty_env {fault}/{phase}: {verdict} {clean(message, 160)}')
            if not args.keep_work:
                shutil.rmtree(case, ignore_errors=True)
    c = Counter(row['verdict'] for row in cases)
    counts = dict(cases=len(cases), clean_one_line_naming_env_and_step=c['clean_named'],
                  clean_error_without_env_or_step=c['clean_unnamed'], traceback=c['traceback'],
                  accepted_silently=c['accepted'], hang=c['hang'], crash=c['crash'])
    return dict(counts=counts, wall_seconds=round(time.perf_counter() - start, 1), cases=cases)


# =============================================================================== 4. checkpoints

class _RunsCommand:
    """Unpickling this runs a shell command (what a malicious checkpoint would do)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class _OpensFile:
    """Unpickling this creates a file through `open`."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, 'w'))


def flip_tensor_byte(path: Path) -> str:
    """Flip one exponent byte in the middle of the largest tensor stored in a torch zip checkpoint."""
    with zipfile.ZipFile(path) as zf:
        entries = [info for info in zf.infolist() if re.search(r'/data/\d+$', info.filename)]
        info = max(entries, key=lambda e: e.file_size)
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError('compressed checkpoint entry')
    with open(path, 'r+b') as f:
        f.seek(info.header_offset)
        header = f.read(30)
        name_len, extra_len = struct.unpack('<HH', header[26:30])
        data_start = info.header_offset + 30 + name_len + extra_len
        offset = data_start + (info.file_size // 2 // 4) * 4 + 3  # the sign/exponent byte of a float32
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x40]))
    return info.filename.split('/', 1)[-1]


def category_checkpoint(runner: Runner, args: argparse.Namespace, clean: Cleaner) -> dict:
    import torch
    start = time.perf_counter()
    base = runner.case_dir('ckpt/base')
    res = runner.tidal(['train', 'pendulum_sac', '--max-env-step', '150', '--no-progress', '--exp-name', 'base',
                        '--set', 'policy.random_collect_size=100'], base, timeout=180)
    base_run = base / 'run' / 'base'
    if not (base_run / 'ckpt' / 'latest.pt').is_file():
        raise RuntimeError(f'checkpoint base run failed: {clean(res.last_err_line())}')
    cases = []

    def one(name: str, desc: str, prepare: Callable[[Path, Path], list[str]]) -> None:
        case = runner.case_dir(f'ckpt/{name}')
        marker = case / 'MARKER_code_ran'
        argv = prepare(case / 'run', marker)
        res = runner.tidal(argv, case, timeout=args.timeout)
        executed = marker.exists()
        verdict = 'code_executed' if executed else res.outcome
        cases.append(dict(id=name, desc=desc, argv=[clean(a) for a in argv], outcome=res.outcome, verdict=verdict,
                          code_executed=executed, rc=res.rc, seconds=res.seconds,
                          stderr_lines=len([ln for ln in res.stderr.splitlines() if ln.strip()]),
                          message=clean(res.last_err_line()), last_stdout=clean(res.last_out_line())))
        progress(f'checkpoint {name}: {verdict} {clean(res.last_err_line(), 160)}')
        if not args.keep_work:
            shutil.rmtree(case, ignore_errors=True)

    def evil_zip(cwd: Path, marker: Path) -> list[str]:
        torch.save({'policy': _RunsCommand(f'touch {marker}')}, cwd / 'best.pt')
        return ['eval', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '1']

    def evil_legacy(cwd: Path, marker: Path) -> list[str]:
        with open(cwd / 'best.pt', 'wb') as f:
            pickle.dump({'policy': _OpensFile(str(marker))}, f, protocol=2)
        return ['eval', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '1']

    def evil_resume(cwd: Path, marker: Path) -> list[str]:
        shutil.copytree(base_run, cwd / 'base')
        torch.save({'policy': _RunsCommand(f'touch {marker}')}, cwd / 'base' / 'ckpt' / 'latest.pt')
        return ['resume', 'base', '--no-progress']

    def flipped_best(cwd: Path, marker: Path) -> list[str]:
        shutil.copy(base_run / 'ckpt' / 'best.pt', cwd / 'best.pt')
        flip_tensor_byte(cwd / 'best.pt')
        return ['eval', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '1']

    def truncated_best(cwd: Path, marker: Path) -> list[str]:
        data = (base_run / 'ckpt' / 'best.pt').read_bytes()
        (cwd / 'best.pt').write_bytes(data[:len(data) // 2])
        return ['eval', 'pendulum_sac', '--ckpt', 'best.pt', '--episodes', '1']

    def flipped_latest(cwd: Path, marker: Path) -> list[str]:
        shutil.copytree(base_run, cwd / 'base')
        flip_tensor_byte(cwd / 'base' / 'ckpt' / 'latest.pt')
        return ['resume', 'base', '--no-progress']

    def truncated_latest(cwd: Path, marker: Path) -> list[str]:
        shutil.copytree(base_run, cwd / 'base')
        path = cwd / 'base' / 'ckpt' / 'latest.pt'
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])
        return ['resume', 'base', '--no-progress']

    one('pickle_os_system', 'best.pt whose pickle calls os.system (torch zip format), tidal eval', evil_zip)
    one('pickle_open', 'best.pt that is a bare pickle calling open(), tidal eval', evil_legacy)
    one('pickle_resume', 'latest.pt whose pickle calls os.system, tidal resume', evil_resume)
    one('flipped_byte_eval', 'best.pt with one byte of a tensor flipped, tidal eval', flipped_best)
    one('truncated_eval', 'best.pt cut to half its size, tidal eval', truncated_best)
    one('flipped_byte_resume', 'latest.pt with one byte of a tensor flipped, tidal resume', flipped_latest)
    one('truncated_resume', 'latest.pt cut to half its size, tidal resume', truncated_latest)
    if not args.keep_work:
        shutil.rmtree(base, ignore_errors=True)
    c = Counter(row['outcome'] for row in cases)  # the exit, whether or not code ran on the way
    counts = dict(cases=len(cases), code_executed=sum(row['code_executed'] for row in cases),
                  clean_error=c['error'], traceback=c['traceback'], silent_acceptance=c['accepted'],
                  hang=c['hang'], crash=c['crash'])
    return dict(counts=counts, wall_seconds=round(time.perf_counter() - start, 1), cases=cases)


# =============================================================================== 5. disk faults

def category_disk(runner: Runner, args: argparse.Namespace, clean: Cleaner) -> dict:
    sys.path.insert(0, str(HELPERS))
    from diskfault import MODES
    start = time.perf_counter()
    cases = []
    argv = ['train', 'pendulum_sac', '--max-env-step', '300', '--no-progress', '--set',
            'policy.random_collect_size=100', '--set', 'policy.learn.learner.save_ckpt_freq=100']
    for mode in MODES:
        case = runner.case_dir(f'disk/{mode}')
        log = case / 'faults.log'
        res = runner.script([sys.executable, str(HELPERS / 'diskfault.py'), mode, *argv], case, args.timeout,
                            env_extra={'RELIABILITY_FAULT_LOG': str(log)})
        fired = read_text(log).splitlines()
        tmp = leftover_tmp(case / 'run')
        verdict = res.outcome if fired else f'{res.outcome} (fault never fired)'
        errno_named = bool(re.search(r'No space left|Read-only|ENOSPC|EROFS|disk|read-only', res.last_err_line(),
                                     re.IGNORECASE))
        cases.append(dict(id=mode, outcome=res.outcome, verdict=verdict, faults_fired=len(fired),
                          first_fault=fired[0] if fired else None, rc=res.rc, seconds=res.seconds,
                          stderr_lines=len([ln for ln in res.stderr.splitlines() if ln.strip()]),
                          message=clean(res.last_err_line()), names_cause=errno_named, leftover_tmp=tmp))
        progress(f'disk {mode}: {verdict}, {len(tmp)} tmp left, {clean(res.last_err_line(), 160)}')
        if not args.keep_work:
            shutil.rmtree(case, ignore_errors=True)
    counts = dict(cases=len(cases),
                  one_line_error=sum(r['outcome'] == 'error' for r in cases),
                  traceback=sum(r['outcome'] == 'traceback' for r in cases),
                  accepted_despite_fault=sum(r['outcome'] == 'accepted' and r['faults_fired'] > 0 for r in cases),
                  hang=sum(r['outcome'] == 'hang' for r in cases),
                  crash=sum(r['outcome'] == 'crash' for r in cases),
                  fault_never_fired=sum(r['faults_fired'] == 0 for r in cases),
                  cases_with_leftover_tmp=sum(bool(r['leftover_tmp']) for r in cases),
                  leftover_tmp_files=sum(len(r['leftover_tmp']) for r in cases))
    return dict(counts=counts, wall_seconds=round(time.perf_counter() - start, 1), cases=cases)


# =============================================================================== 6. run end

def run_end_named(stdout: str, dirs: list[Path]) -> bool:
    """The last stdout line names why the run ended (budget / stop value) and its run folder."""
    line = last_line(stdout).lower()
    reason = 'budget' in line or 'stop value' in line or 'stop_value' in line
    folder = any(d.name.lower() in line for d in dirs) if dirs else False
    return reason and folder


def category_run_end(runner: Runner, args: argparse.Namespace, clean: Cleaner) -> dict:
    start = time.perf_counter()
    cases = []
    base = ['train', 'pendulum_sac', '--no-progress', '--set', 'policy.random_collect_size=100',
            '--set', 'policy.learn.learner.save_ckpt_freq=1000000']
    for name, extra, reason in (('budget', ['--max-env-step', '300'], 'budget'),
                                ('stop_value', ['--max-env-step', '3000', '--set', 'env.stop_value=-5000'],
                                 'stop value')):
        case = runner.case_dir(f'run_end/{name}')
        res = runner.tidal(base + extra, case, timeout=args.timeout)
        dirs = run_dirs(case / 'run')
        line = last_line(res.stdout)
        cases.append(dict(id=name, outcome=res.outcome, last_stdout=clean(line), expected_reason=reason,
                          names_reason=reason in line.lower(),
                          names_run_dir=any(d.name in line for d in dirs),
                          seconds=res.seconds))
        progress(f'run_end {name}: {res.outcome} last stdout line: {clean(line, 160)!r}')
        if not args.keep_work:
            shutil.rmtree(case, ignore_errors=True)
    counts = dict(cases=len(cases), names_reason=sum(r['names_reason'] for r in cases),
                  names_run_dir=sum(r['names_run_dir'] for r in cases),
                  both=sum(r['names_reason'] and r['names_run_dir'] for r in cases))
    return dict(counts=counts, wall_seconds=round(time.perf_counter() - start, 1), cases=cases)


def aggregate_run_end(results: dict) -> Optional[dict]:
    """Over every successful train / resume of the other categories: last line names reason and folder."""
    flags = []
    for row in results.get('config', {}).get('cases', []):
        if 'run_end_named' in row:
            flags.append(row['run_end_named'])
    kill = results.get('kill')
    if kill:
        flags.append(kill['reference']['run_end_named'])
        flags += [row['run_end_named'] for row in kill['cases'] if row['run_end_named'] is not None]
    if not flags:
        return None
    return dict(successful_runs=len(flags), last_line_names_reason_and_folder=sum(bool(f) for f in flags))


# =============================================================================== report

def progress(message: str) -> None:
    print(message, flush=True)


TITLES = {
    'config': '1. Bad configs',
    'kill': '2. Kill and resume',
    'faulty_env': '3. Faulty envs',
    'checkpoint': '4. Checkpoints',
    'disk': '5. Disk faults',
    'run_end': '6. Run end',
}


def write_table(results: dict, path: Path) -> None:
    meta = results['meta']
    lines = [f"# tidal reliability: {meta['label']}", '',
             f"Source tree at commit `{meta['src_commit']}`; suite wall time {meta['wall_seconds'] / 60:.1f} min "
             f"({meta['started']}).", '']
    for name in CATEGORIES:
        if name not in results['categories']:
            continue
        cat = results['categories'][name]
        lines += [f"## {TITLES[name]}", '', f"wall time {cat.get('wall_seconds', 0):.0f} s", '',
                  '| count | value |', '|---|---|']
        lines += [f'| {key} | {value} |' for key, value in cat['counts'].items()]
        lines.append('')
        if name == 'config':
            lines += [f"Each case: `tidal train ... --max-env-step {cat['budget_env_steps']}` with "
                      f"{', '.join('`' + s + '`' for s in CONFIG_BASE_SETS)}, timeout {cat['timeout_s']} s.",
                      '', 'Failures: traceback, hang, crash, nonsense_accepted (accepted although expected to be '
                      'refused), accepted_nonfinite_weights. `expect_error` rules:', '']
            lines += [f'- **{key}**: {text}' for key, text in RULES.items()]
            by_rule = Counter((row['rule'], row['outcome']) for row in cat['cases'])
            rules = sorted({rule for rule, _ in by_rule})
            outcomes = ('error', 'traceback', 'hang', 'crash', 'accepted')
            lines += ['', '| rule | ' + ' | '.join(outcomes) + ' |', '|---' * (len(outcomes) + 1) + '|']
            for rule in rules:
                lines.append(f'| {rule} | ' + ' | '.join(str(by_rule.get((rule, o), 0)) for o in outcomes) + ' |')
            bad = [row for row in cat['cases'] if row['outcome'] in ('traceback', 'hang', 'crash')
                   or (row['outcome'] == 'accepted' and (row['expect_error'] or row.get('weights_finite') is False))]
            if bad:
                lines += ['', '<details><summary>failing cases</summary>', '', '| id | case | outcome | message |',
                          '|---|---|---|---|']
                for row in bad:
                    outcome = row['outcome'] + (' (non-finite weights)' if row.get('weights_finite') is False else '')
                    message = row['message'].replace('|', '\\|')[:140]
                    lines.append(f"| {row['id']} | `{row['desc']}` | {outcome} | {message} |")
                lines += ['', '</details>']
            lines.append('')
        elif name == 'kill':
            ref = cat['reference']
            l2 = cat['rel_l2_when_different']
            lines += [f"Reference: `tidal {' '.join(ref['argv'])}`, {ref['wall_seconds']:.1f} s; a second "
                      f"uninterrupted run repeats it bit for bit: {ref['repeat_identical']} (evals: "
                      f"{ref['repeat_evals_identical']}). Kill moments uniform over the reference's wall time "
                      f"(seeded; a run that ends first is repeated, killed at the same fraction of its own "
                      f"length); every third case is killed a second time during its resume. Counts of "
                      f"identical weights and eval rows are over all cases, so a failed resume counts as "
                      f"not identical.", '',
                      f"Relative L2 distance of the policy state when not identical: n={l2['n']}, "
                      f"min={_fmt(l2['min'])}, median={_fmt(l2['median'])}, max={_fmt(l2['max'])}.", '']
            if cat['failed_resume_messages']:
                lines += ['Failed resumes:', '']
                lines += [f'- {n}x `{msg}`' for msg, n in cat['failed_resume_messages'].items()]
                lines.append('')
        elif name in ('faulty_env', 'checkpoint', 'disk'):
            lines += ['| case | outcome | message |', '|---|---|---|']
            for row in cat['cases']:
                extra = f" ({len(row['leftover_tmp'])} tmp left)" if row.get('leftover_tmp') else ''
                message = row['message'].replace('|', '\\|')[:160]
                lines.append(f"| {row['id']} | {row['verdict']}{extra} | {message} |")
            lines.append('')
        elif name == 'run_end':
            lines += ['| case | outcome | last stdout line |', '|---|---|---|']
            for row in cat['cases']:
                lines.append(f"| {row['id']} | {row['outcome']} | `{row['last_stdout'][:140]}` |")
            if cat.get('aggregate'):
                agg = cat['aggregate']
                lines += ['', f"Over all successful train / resume runs of this suite: "
                              f"{agg['last_line_names_reason_and_folder']} of {agg['successful_runs']} "
                              f"name the reason and the run folder in their last stdout line."]
            lines.append('')
    path.write_text('\n'.join(lines) + '\n')


def _fmt(x: Optional[float]) -> str:
    return 'n/a' if x is None else f'{x:.3g}'


def src_commit(src: Path) -> str:
    try:
        return subprocess.run(['git', '-C', str(src), 'rev-parse', '--short', 'HEAD'], capture_output=True,
                              text=True, timeout=10).stdout.strip() or 'unknown'
    except Exception:
        return 'unknown'


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--src', type=Path, required=True, help='tidal source tree to test (holds tidal/)')
    parser.add_argument('--out', type=Path, required=True, help='folder for results.json and table.md')
    parser.add_argument('--only', choices=CATEGORIES, action='append', help='run only this category; repeatable')
    parser.add_argument('--kills', type=int, default=20, help='kill-and-resume cases')
    parser.add_argument('--seed', type=int, default=0, help='seed of the kill moments')
    parser.add_argument('--config-steps', type=int, default=150,
                        help='env-step budget of each config case (random_collect_size is 100)')
    parser.add_argument('--config-timeout', type=float, default=30,
                        help='seconds before a config case counts as a hang (its accepted runs take 1-10 s)')
    parser.add_argument('--timeout', type=float, default=60,
                        help='seconds before a case of the other categories counts as a hang')
    parser.add_argument('--no-fork', action='store_true',
                        help='run config cases as plain subprocesses instead of forks of a warm server (slower)')
    parser.add_argument('--limit', type=int, default=0, help='only the first N config cases (for trying out)')
    parser.add_argument('--cases', default='', help='only these config cases, e.g. c013,c041')
    parser.add_argument('--label', default='', help='name of the tested tree in the report (default: --src name)')
    parser.add_argument('--keep-work', action='store_true', help='keep the case folders')
    args = parser.parse_args(argv)
    src = args.src.resolve()
    if not (src / 'tidal' / '__init__.py').is_file():
        parser.error(f'{src} holds no tidal package')
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix='tidal-reliability-'))
    clean = Cleaner([(work, '<case>'), (src, '<src>'), (HELPERS, '<helpers>'), (args.out.resolve(), '<out>'),
                     (Path(sys.executable).parent, '<python>')])
    runner = Runner(src, work, fork=not args.no_fork)
    selected = args.only or list(CATEGORIES)
    started = time.strftime('%Y-%m-%d %H:%M')
    start = time.perf_counter()
    results: dict[str, Any] = {}
    handlers = dict(config=category_config, kill=category_kill, faulty_env=category_faulty_env,
                    checkpoint=category_checkpoint, disk=category_disk, run_end=category_run_end)
    try:
        for name in CATEGORIES:
            if name in selected:
                progress(f'== {TITLES[name]}')
                try:
                    results[name] = handlers[name](runner, args, clean)
                except Exception as err:  # a broken category must not lose the others' results
                    import traceback
                    traceback.print_exc()
                    results[name] = dict(counts={'suite_error': 1}, error=clean(f'{type(err).__name__}: {err}'),
                                         cases=[])
                progress(f"   {json.dumps(results[name]['counts'])}")
    finally:
        runner.close()
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    if 'run_end' in results:
        results['run_end']['aggregate'] = aggregate_run_end(results)
    wall = time.perf_counter() - start
    report = dict(meta=dict(label=args.label or src.name, src_commit=src_commit(src), started=started,
                            wall_seconds=round(wall, 1), categories=selected, kills=args.kills, seed=args.seed,
                            config_steps=args.config_steps, config_timeout_s=args.config_timeout,
                            timeout_s=args.timeout, fork_server=not args.no_fork, python=sys.version.split()[0]),
                  categories=results)
    (args.out / 'results.json').write_text(json.dumps(report, indent=1, default=str) + '\n')
    write_table(report, args.out / 'table.md')
    progress(f'wrote {args.out / "results.json"} and table.md; wall time {wall / 60:.1f} min')
    return 0


if __name__ == '__main__':
    sys.exit(main())
