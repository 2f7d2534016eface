"""Shared plumbing of the benchmark scripts: the run-folder format, launching runs, other libraries' venvs.

Every trainer (tidal's CLI and the SB3 runner) writes the same run folder, `evals.csv` plus
`summary.json`, so one reader serves both and the comparison never depends on which library
produced a number. Only the standard library is imported here, because the SB3 runner imports
this module from its own virtual environment.
"""
import argparse
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

BENCH_DIR = Path(os.path.abspath(__file__)).parent
REPO_ROOT = BENCH_DIR.parent
SB3_VENV = BENCH_DIR / '.venv-sb3'
LIGHTZERO_VENV = BENCH_DIR / '.venv-lightzero'
RLLIB_VENV = BENCH_DIR / '.venv-rllib'
D3RLPY_VENV = BENCH_DIR / '.venv-d3rlpy'
D3RLPY_PIN = 'd3rlpy==2.8.1'
TORCH_PIN = 'torch==2.13.0'
LIGHTZERO_PIN = 'lightzero==0.2.0'
DI_ENGINE_PIN = 'DI-engine==0.5.3'
RAY_PIN = 'ray[rllib]==2.60.0'
# LunarLander's Box2D: gymnasium's `box2d` extra wants box2d-py, which builds from source with swig; the
# `box2d` distribution (same `Box2D` module) ships wheels. pygame is the extra's other part: importing
# `gymnasium.envs.box2d` (as making any of its envs does) imports CarRacing, which needs it.
BOX2D_INSTALL = ['box2d>=2.3.10', 'pygame>=2.1.3']
# What LightZero's training entry (`lzero.entry.train_muzero`, DI-engine beneath it) needs beyond tidal's
# environment, pinned to the versions that made LightZero's CartPole MuZero run here. LightZero and DI-engine
# themselves go in with --no-deps: both require numpy<2 (and LightZero gymnasium==0.28), which would replace
# tidal's numpy; what they import is listed here instead. Unpinned names are found in tidal's environment.
LIGHTZERO_TRAINING_INSTALL = [
    'DI-toolkit==0.3.0', 'DI-treetensor==0.5.0', 'URLObject==3.0.0', 'trueskill==0.4.5', 'hickle==5.0.3',
    'tabulate==0.10.0', 'pynng==0.9.0', 'mpire==2.10.2', 'redis==8.1.0', 'yapf==0.29.0', 'gym==0.25.1',
    'einops==0.8.2', 'wandb==0.19.0', 'Pympler==1.1', 'protobuf==5.29.6', 'tensorboard==2.18.0',
    'enum-tools==0.13.0', 'cloudpickle==3.1.2', 'responses', 'click', 'requests', 'sniffio',
]
# The versions their dependencies got (`pip freeze --local` of the venv), as pip constraints.
LIGHTZERO_TRAINING_CONSTRAINTS = [
    'absl-py==2.5.1', 'bitmath==2.1.1', 'chardet==4.0.0', 'deprecation==2.1.0', 'dill==0.4.1',
    'docker-pycreds==0.4.0', 'gitdb==4.0.12', 'GitPython==3.2.1', 'graphviz==0.21', 'grpcio==1.85.1',
    'gym-notices==0.1.0', 'h5py==3.16.0', 'hbutils==0.14.2', 'joblib==1.6.0', 'Markdown==3.11.3',
    'markdown-it-py==4.3.0', 'mdurl==0.1.2', 'narwhals==2.29.0', 'platformdirs==4.14.7', 'psutil==7.2.2',
    'pytimeparse==1.1.10', 'rich==15.0.0', 'scikit-learn==1.9.1', 'sentry-sdk==2.75.0', 'setproctitle==1.3.8',
    'smmap==5.0.3', 'tensorboard-data-server==0.7.2', 'threadpoolctl==3.8.0', 'treevalue==1.5.0',
    'yattag==1.16.1',
]

EVALS_HEADER = ('env_step', 'train_iter', 'wall_time', 'return_mean', 'return_std', 'episode_length_mean')
SUMMARY_KEYS = ('env_step', 'train_iter', 'wall_time', 'env_steps_per_s', 'updates_per_s')

# Module-level so a smoke test can swap in a fake trainer; the benchmarks always run the real CLI.
TIDAL_CMD = [sys.executable, '-m', 'tidal']


# ---------------------------------------------------------------- run folder format

class EvalLog:
    """Appends one `evals.csv` row per evaluation, flushed at once so progress can be watched."""

    def __init__(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = open(run_dir / 'evals.csv', 'w', newline='')
        self._writer = csv.writer(self._file)
        self._writer.writerow(EVALS_HEADER)
        self._file.flush()

    def write(self, env_step: int, train_iter: int, wall_time: float, return_mean: float,
              return_std: float, episode_length_mean: float) -> None:
        self._writer.writerow([env_step, train_iter, f'{wall_time:.3f}', f'{return_mean:.4f}',
                               f'{return_std:.4f}', f'{episode_length_mean:.2f}'])
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_summary(run_dir: Path, env_step: int, train_iter: int, wall_time: float) -> dict:
    """Writes `summary.json`; rates are totals over the whole wall time, evaluations included."""
    summary = {'env_step': env_step, 'train_iter': train_iter, 'wall_time': round(wall_time, 3),
               'env_steps_per_s': round(env_step / wall_time, 2),
               'updates_per_s': round(train_iter / wall_time, 2)}
    (run_dir / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')
    return summary


def read_evals(run_dir: Path) -> list[dict]:
    """Rows of `evals.csv` as floats (ints for the counters); a half-written last line is dropped."""
    path = run_dir / 'evals.csv'
    if not path.exists():
        return []
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        missing = set(EVALS_HEADER) - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f'{path}: missing columns {sorted(missing)}')
        rows = []
        for row in reader:
            try:
                rows.append({k: (int(float(row[k])) if k in ('env_step', 'train_iter') else float(row[k]))
                             for k in EVALS_HEADER})
            except (TypeError, ValueError):
                break
    return rows


def read_run(run_dir: Path) -> dict:
    """A finished run: its evaluations and summary; raises if the trainer did not finish."""
    summary_path = run_dir / 'summary.json'
    if not summary_path.exists():
        raise FileNotFoundError(f'{display_path(summary_path)} is missing: the run did not finish')
    summary = json.loads(summary_path.read_text())
    missing = set(SUMMARY_KEYS) - set(summary)
    if missing:
        raise ValueError(f'{display_path(summary_path)}: missing keys {sorted(missing)}')
    evals = read_evals(run_dir)
    if not evals:
        raise ValueError(f'{display_path(run_dir)}: evals.csv has no rows')
    return {'evals': evals, 'summary': {k: summary[k] for k in SUMMARY_KEYS}}


def display_path(path: Path) -> str:
    """Path relative to the repo root when inside it, so saved results name no machine paths."""
    path = Path(os.path.abspath(path))  # not resolve(): a venv's python is a symlink to keep as is
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- tidal commands

def device_name(device: str, cpu_threads: str) -> str:
    """The GPU's name for a cuda `device`; else the CPU's, with how many torch threads (`cpu_threads`) each run has."""
    import platform

    import torch
    if device.startswith('cuda') and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return f'CPU ({platform.processor() or platform.machine()}), {cpu_threads}'


def merge_overrides(defaults: Iterable[str], extra: Iterable[str]) -> list[str]:
    """`KEY=VALUE` overrides, later ones replacing earlier ones with the same key."""
    merged: dict[str, str] = {}
    for item in [*defaults, *extra]:
        key, sep, _ = item.partition('=')
        if not sep or not key:
            raise SystemExit(f'error: override {item!r} is not KEY=VALUE')
        merged[key] = item
    return list(merged.values())


def applicable_overrides(config: str, overrides: Iterable[str]) -> tuple[list[str], list[str]]:
    """The overrides whose key `config` has, and those it lacks (tidal refuses unknown keys).

    Imports tidal, so only the tidal-side scripts may call it; the checkout's tidal comes first, as it
    does for the `python -m tidal` runs started from the repo root.
    """
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tidal.config import compile_config, resolve_config_source

    cfg = compile_config(*resolve_config_source(config))
    kept, dropped = [], []
    for item in overrides:
        node, found = cfg, True
        for key in item.partition('=')[0].split('.'):
            found = isinstance(node, dict) and key in node
            if not found:
                break
            node = node[key]
        (kept if found else dropped).append(item)
    return kept, dropped


def check_tidal_config(config: str, overrides: Iterable[str]) -> None:
    """Exits before any run starts when `config` with `overrides` cannot be built (a missing config or env
    package, an unknown key, a bad value): tidal compiles it as `tidal train` would."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tidal.config import compile_config, resolve_config_source

    try:
        compile_config(*resolve_config_source(config), overrides=list(overrides))
    except Exception as err:  # name it in one line
        raise SystemExit(f'error: config {config}: {type(err).__name__}: {err}') from None


def tidal_train_command(config: str, seed: int, steps: int, run_dir: Path, overrides: Iterable[str],
                        budget: str = '--max-env-step') -> list[str]:
    """The `tidal train` argument list, with the run folder given relative to the repo root; `budget` is the option
    `steps` goes to (`--max-train-iter` for an offline config)."""
    cmd = [*TIDAL_CMD, 'train', config, '-s', str(seed), budget, str(steps), '--exp-name', display_path(run_dir)]
    for item in overrides:
        cmd += ['--set', item]
    return cmd


def thread_env(threads: int) -> dict[str, str]:
    """Environment that fixes the torch/BLAS thread count of a training subprocess."""
    return {'OMP_NUM_THREADS': str(threads), 'MKL_NUM_THREADS': str(threads)}


def shown_command(cmd: list[str], threads: int) -> str:
    """The command as someone would type it at the repo root (`tidal` for `python -m tidal`)."""
    if cmd[:len(TIDAL_CMD)] == TIDAL_CMD:
        cmd = ['tidal', *cmd[len(TIDAL_CMD):]]
    elif cmd and Path(cmd[0]).is_absolute():
        cmd = [display_path(Path(cmd[0])), *cmd[1:]]
    env = ' '.join(f'{k}={v}' for k, v in thread_env(threads).items())
    return f'{env} {shlex.join(cmd)}'


# ---------------------------------------------------------------- running jobs side by side

@dataclass
class Job:
    """One training subprocess: its command, the run folder it fills and where its output goes."""
    name: str
    cmd: list[str]
    run_dir: Path
    resume: bool = False  # the command resumes the run in run_dir (`tidal resume`): its folder is kept

    @property
    def log_path(self) -> Path:
        return self.run_dir.with_name(self.run_dir.name + '.log')


def core_sets(n_jobs: int, threads: int) -> list[set[int]] | None:
    """Disjoint CPU sets, one per job, or None when the machine cannot give each job its own cores."""
    if not hasattr(os, 'sched_getaffinity'):
        return None
    cores = sorted(os.sched_getaffinity(0))
    if n_jobs * threads > len(cores):
        return None
    return [set(cores[i * threads:(i + 1) * threads]) for i in range(n_jobs)]


def _status(job: Job) -> str:
    rows = read_evals(job.run_dir)
    if not rows:
        return f'{job.name}: starting'
    last = rows[-1]
    return f"{job.name}: env {last['env_step']}, return {last['return_mean']:.1f}"


def run_batch(title: str, jobs: list[Job], threads: int, pin: bool = True) -> None:
    """Prints the batch's heading and each job's command, then runs the jobs together (`run_together`)."""
    print(f'\n== {title}', flush=True)
    for job in jobs:
        print(f'$ {shown_command(job.cmd, threads)}', flush=True)
    run_together(jobs, threads, pin=pin)


def run_pairs_then_rest(jobs: dict[int, dict[str, Job]], pair: tuple[str, str], rest: str | None = None,
                        label: str = '') -> None:
    """Each seed's two `pair` arms side by side, one per core (the runs a wall-clock ratio compares), seed after
    seed; then the `rest` arm of every seed, two at a time. One torch thread per run."""
    for seed, arms in jobs.items():
        run_batch(f'{label}seed {seed}: {pair[0]} and {pair[1]}', [arms[pair[0]], arms[pair[1]]], threads=1)
    if rest is not None:
        run_in_twos(f'{label}{rest}', [arms[rest] for arms in jobs.values()])


def run_in_twos(title: str, jobs: list[Job]) -> None:
    """`jobs` two at a time, one per core and one torch thread each, in their order."""
    for start in range(0, len(jobs), 2):
        run_batch(title, jobs[start:start + 2], threads=1)


def run_together(jobs: list[Job], threads: int, pin: bool = True, poll_s: float = 30.0) -> None:
    """Starts all jobs at once (each pinned to its own cores when possible) and waits for all.

    Raises SystemExit naming every failed job and showing the end of its log.
    """
    run_lanes([[job] for job in jobs], threads, pin, poll_s)


def run_lanes(lanes: list[list[Job]], threads: int, pin: bool = True, poll_s: float = 30.0) -> None:
    """Runs each lane's jobs one after another, the lanes side by side, each lane on its own cores, so a
    long job (another library's run) can share the machine with a queue of short ones.

    Raises SystemExit, once every lane is done, naming every failed job and showing the end of its log.
    """
    cores = core_sets(len(lanes), threads) if pin else None
    env = {**os.environ, **thread_env(threads)}
    queues = [list(lane) for lane in lanes]
    running: list[tuple[Job, subprocess.Popen, Any] | None] = [None] * len(lanes)
    failed: list[str] = []

    def start_next(i: int) -> None:
        job = queues[i].pop(0)
        if job.run_dir.exists() and not job.resume:
            shutil.rmtree(job.run_dir)
        job.run_dir.parent.mkdir(parents=True, exist_ok=True)
        log = open(job.log_path, 'a' if job.resume else 'w')
        affinity = cores[i] if cores else None
        preexec = (lambda c=affinity: os.sched_setaffinity(0, c)) if affinity else None
        proc = subprocess.Popen(job.cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=preexec)
        running[i] = (job, proc, log)
        where = f' on cores {sorted(affinity)}' if affinity else ''
        print(f'  started {job.name}{where}, log: {display_path(job.log_path)}', flush=True)

    def finish(i: int) -> None:
        job, proc, log = running[i]
        log.close()
        running[i] = None
        if proc.returncode != 0:
            tail = job.log_path.read_text(errors='replace').splitlines()[-20:]
            failed.append(f'{job.name} exited with {proc.returncode}; end of {display_path(job.log_path)}:\n'
                          + '\n'.join('    ' + line for line in tail))

    start = time.perf_counter()
    next_report = poll_s
    for i, queue in enumerate(queues):
        if queue:
            start_next(i)
    while any(slot is not None for slot in running):
        time.sleep(0.5)
        for i, slot in enumerate(running):
            if slot is not None and slot[1].poll() is not None:
                finish(i)
                if queues[i]:
                    start_next(i)
        elapsed = time.perf_counter() - start
        if elapsed >= next_report:
            next_report += poll_s
            print(f'  [{elapsed:5.0f}s] ' + ' | '.join(_status(slot[0]) for slot in running if slot), flush=True)
    print(f'  done in {time.perf_counter() - start:.0f}s', flush=True)
    if failed:
        raise SystemExit('error: ' + '\n'.join(failed))


# ---------------------------------------------------------------- virtual environments of other libraries

def venv_python(venv: Path) -> Path:
    return venv / ('Scripts/python.exe' if os.name == 'nt' else 'bin/python')


def ensure_venv(venv: Path, imports: str, installs: list[list[str]], system_site_packages: bool = False,
                constraints: Iterable[str] = (), frozen: Iterable[str] = ()) -> Path:
    """Python of `venv`, set up on first use by running each pip install of `installs` in turn.

    The venv is ready once it can import the comma-separated modules `imports` and has tidal's torch
    build; with `system_site_packages` it sees this environment's packages, torch included. Each install
    gets the pip `constraints` plus the packages of `frozen` pinned to the versions the venv sees before
    installing (with `system_site_packages`: this environment's), so no install can change them; they
    are checked again afterwards. Running it on a venv that exists but fails the import reruns every step
    (pip skips what is already there).
    """
    python = venv_python(venv)
    probe = [str(python), '-c', f'import {imports}, torch; print(torch.__version__)']
    torch_version = TORCH_PIN.split('==')[1]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip().startswith(torch_version):
            return python
    print(f'setting up the virtual environment {display_path(venv)} ...', flush=True)
    flags = ['--system-site-packages'] if system_site_packages else []
    _run_shown([sys.executable, '-m', 'venv', *flags, str(venv)], ['python', '-m', 'venv', *flags, display_path(venv)])
    frozen, pins = list(frozen), list(constraints)
    before = _versions(python, frozen)
    pins += [f'{name}=={version}' for name, version in before.items() if version is not None]
    pip = ['-m', 'pip', 'install', '--quiet']
    if pins:
        constraints_file = venv / 'constraints.txt'
        constraints_file.write_text('\n'.join(pins) + '\n')
        pip += ['-c', str(constraints_file)]
    for args in installs:  # shown as typed at the repo root, naming no machine paths
        cmd = [str(python), *pip, *args]
        _run_shown(cmd, [display_path(Path(a)) if os.path.isabs(a) else a for a in cmd])
    found = subprocess.run(probe, capture_output=True, text=True)
    if found.returncode != 0:
        raise SystemExit(f'error: {display_path(venv)} cannot import {imports} after its installs:\n{found.stderr}')
    if not found.stdout.strip().startswith(torch_version):
        raise SystemExit(f'error: {display_path(venv)} has torch {found.stdout.strip()}, expected {TORCH_PIN}')
    after = _versions(python, frozen)
    if after != before:
        raise SystemExit(f'error: the installs in {display_path(venv)} changed {before} to {after}')
    return python


def _run_shown(cmd: list[str], shown: list[str]) -> None:
    print(f'$ {shlex.join(shown)}', flush=True)
    subprocess.run(cmd, check=True)


def _versions(python: Path, names: list[str]) -> dict[str, str | None]:
    """The installed version of each distribution in `names` as `python` sees it (None: not installed)."""
    if not names:
        return {}
    code = ('import importlib.metadata as m, json, sys\n'
            'def v(n):\n'
            '    try:\n        return m.version(n)\n'
            '    except m.PackageNotFoundError:\n        return None\n'
            'print(json.dumps({n: v(n) for n in sys.argv[1:]}))')
    out = subprocess.run([str(python), '-c', code, *names], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def ensure_sb3_venv(venv: Path = SB3_VENV) -> Path:
    """Python of the SB3 venv (with sb3-contrib), created on first use with the same torch build as tidal's.

    SB3 lives apart so it never becomes a dependency of tidal (with MuJoCo and what gymnasium's MuJoCo envs
    import); torch is installed first and pinned
    again in the second install so pip cannot swap it for another (multi-GB) build.
    """
    return ensure_venv(venv, 'stable_baselines3, sb3_contrib, gymnasium.envs.mujoco',
                       [[TORCH_PIN], ['stable-baselines3', 'sb3-contrib', 'gymnasium', 'mujoco', 'imageio', 'packaging',
                                      TORCH_PIN]])


def ensure_d3rlpy_venv(venv: Path = D3RLPY_VENV) -> Path:
    """Python of the d3rlpy venv: tidal's torch build, d3rlpy 2.8 and the gymnasium it pins (1.0.0) with MuJoCo,
    apart from tidal's environment (d3rlpy pins another gymnasium)."""
    return ensure_venv(venv, 'd3rlpy, gymnasium.envs.mujoco',
                       [[TORCH_PIN], [D3RLPY_PIN, 'gymnasium[mujoco]==1.0.0', TORCH_PIN]])


def ensure_lightzero_venv(training: bool = False) -> Path:
    """Python of the LightZero venv: tidal's torch and numpy from this environment, LightZero beside them.

    The light install (`mcts_speed.py`) is LightZero alone, with `--no-deps` because a plain install makes
    pip swap torch for another build (several GB of CUDA wheels) and numpy for a 1.x: its compiled tree
    needs nothing beyond numpy. `training` adds what `lzero.entry.train_muzero` needs (DI-engine and the
    pinned `LIGHTZERO_TRAINING_*` lists), done once: skipped while `import lzero.entry, ding, gym` works.
    Every install is constrained to this environment's torch and numpy versions, checked after.
    """
    installs = [['--no-deps', LIGHTZERO_PIN]]
    imports = 'lzero'
    if training:
        installs = [['--no-deps', LIGHTZERO_PIN, DI_ENGINE_PIN], LIGHTZERO_TRAINING_INSTALL]
        imports = 'lzero.entry, ding, gym'
    return ensure_venv(LIGHTZERO_VENV, imports, installs, system_site_packages=True,
                       constraints=LIGHTZERO_TRAINING_CONSTRAINTS if training else (), frozen=('torch', 'numpy'))


def ensure_rllib_venv(venv: Path = RLLIB_VENV) -> Path:
    """Python of the RLlib venv (Ray's RL library, new API stack), created on first use with tidal's torch build.

    Torch goes in first, alone, and is pinned again beside Ray so pip cannot swap it for another (multi-GB)
    build; RLlib's extra brings its own gymnasium (the version Ray pins), LunarLander's Box2D comes from
    `BOX2D_INSTALL`.
    """
    return ensure_venv(venv, 'ray.rllib.algorithms.ppo, gymnasium.envs.box2d',
                       [[TORCH_PIN], [RAY_PIN, 'gymnasium', *BOX2D_INSTALL, TORCH_PIN]])


def benchmark_parser(doc: str, steps: int | None, quick_steps: int | None = None, threads: bool = False,
                     sets: bool = False, pin: bool = False) -> argparse.ArgumentParser:
    """The options of a learning benchmark: --seeds, --steps (default `steps`), --out, --report-only, --quick when
    it has a smoke-test budget of `quick_steps`, --threads where its runs take a torch thread count, --set (tidal
    overrides, as `extra_sets`) and --no-pin where asked. A script adds its own options, then reads them with
    `benchmark_args`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=steps,
                        help='env steps per run' + (' (default: %(default)s)' if steps else ''))
    if threads:
        parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None,
                        help='output folder (default: benchmarks/results/<benchmark>, or <benchmark>_quick)')
    if quick_steps is not None:
        parser.add_argument('--quick', action='store_true', help=f'smoke test: {quick_steps} steps, first seed only')
    if sets:
        parser.add_argument('--set', dest='extra_sets', action='append', default=[], metavar='KEY=VALUE',
                            help="extra tidal override (tidal's side only; replaces a default with the same key)")
    if pin:
        parser.add_argument('--no-pin', action='store_true', help='do not pin each run to its own cores')
    parser.add_argument('--report-only', action='store_true',
                        help='skip training; rebuild the outputs from the run folders in --out')
    parser.set_defaults(quick=False, quick_steps=quick_steps)
    return parser


def benchmark_args(parser: argparse.ArgumentParser, argv: list[str] | None,
                   name: str | Callable[[argparse.Namespace], str]) -> argparse.Namespace:
    """The options of a `benchmark_parser`, --quick applied (its smoke-test budget, the first seed) and --out
    defaulting to benchmarks/results/<name>, or <name>_quick; `name` may be read from the options (an arm set's)."""
    args = parser.parse_args(argv)
    quick = args.quick
    if quick:
        args.steps, args.seeds = args.quick_steps, args.seeds[:1]
    name = name(args) if callable(name) else name
    args.out = args.out or BENCH_DIR / 'results' / (f'{name}_quick' if quick else name)
    return args
