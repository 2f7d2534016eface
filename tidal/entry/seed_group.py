"""A share of a seed group's seeds trained in one process (the whole group where it has one share).

Every seed is a whole run of its own (`Run`): its run folder `<group>/seed_<k>/` as a run alone writes it, its
envs, replay or rollouts, generators, evaluations and checkpoints, so `tidal resume`, `tidal eval` and
`tidal export` take a seed's folder as any other. What the seeds share is the arithmetic of their updates:
the seeds' feeds step in turn, writing down the updates they ask for (`UpdateRecorder`), and the group makes
the k-th update of every seed in one pass over weights stacked along a seed dimension (`SeedStack`).

The seeds go in lockstep, one feed step each per round. A seed that fails (diverges, its env breaks) stops
alone with its usual one line, named by its seed; the others go on. Between its turns each seed's global
generators are put aside, so no seed draws from another's. The group's driver (`tidal.entry.group_run`) shows
the progress, writes `<group>/aggregate/` and the end line.
"""
from __future__ import annotations

import functools
import json
import math
import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from easydict import EasyDict
from tqdm import tqdm

from tidal.base.errors import ConfigError, TidalError
from tidal.base.feed import FeedClass
from tidal.base.stages import LearnPlan
from tidal.config import read_config
from tidal.entry.run import Run, RunInterrupted
from tidal.entry.run_checkpoints import LATEST
from tidal.envs.numpy_cartpole import unsupported as unsupported_by_numpy
from tidal.policies.base import Policy
from tidal.entry.setup import load_config
from tidal.registry import feed_class, policy_class
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.collector import SampleCollector
from tidal.worker.distributed import catch_signals
from tidal.worker.evaluator import EvalEpisodes
from tidal.worker.rng import GeneratorSnapshot
from tidal.worker.run_groups import read_group, seed_folder
from tidal.worker.seed_acting import SeedActor, SeedFailed, collect_together, evaluate_together
from tidal.worker.seed_stack import SeedStack
from tidal.worker.update_recorder import UpdateRequest

Loaded = Optional[Mapping[int, Optional[dict[str, Any]]]]  # seeds' checkpoints a resume already read, by seed
STAGED = 'latest.next.pt'  # a seed's checkpoint written in a round, before the group commits the round's
COMMIT_PREFIX = 'commit'  # commit.SEED.json: in the group folder while a round's staged checkpoints become the latest


def check_groupable(cfg: EasyDict, feed_cls: FeedClass) -> None:
    """Refuse, in one line naming it, a policy or setting whose seeds cannot share their updates."""
    name = cfg.policy.type
    policy = policy_class(name, cfg.policy)
    if not policy.plans_updates():
        raise ConfigError(f"policy '{name}' cannot train several seeds in one process: it does not state its update "
                          f"as loss stages (Policy._learn_plan); run one process per seed (-s SEED)")
    refusal = policy.group_refusal(cfg)
    if refusal is not None:
        raise ConfigError(f"policy '{name}' cannot train several seeds in one process here: {refusal}")
    if not feed_cls.spec(cfg).groups:
        why = ('policy.priority: prioritized replay reads its updates back' if cfg.policy.get('priority')
               else f"its '{feed_cls.name}' feed reads its updates back within a step")
        raise ConfigError(f"policy '{name}' cannot train several seeds in one process ({why}); run one process "
                          f"per seed (-s SEED)")
    if cfg.collector.type == 'ray':
        raise ConfigError("collector.type 'ray' cannot serve a seed group (--seeds): its seeds step local envs; "
                          "train one process per seed with Ray")
    if cfg.policy.eval.evaluator.on_ray:
        raise ConfigError('policy.eval.evaluator.on_ray cannot serve a seed group (--seeds): its seeds evaluate in '
                          'turn in one process; set it to false')


def group_overrides(cfg: EasyDict) -> list[str]:
    """What a group sets over its config: CartPole-v1 under the 'base' env manager steps as arrays ('numpy'), which
    gives the same steps at less than half the cost (results.md section 22); recording videos keeps
    'base'."""
    if (cfg.env_manager.type == 'base' and unsupported_by_numpy(cfg.env) is None
            and not cfg.policy.eval.evaluator.video_every):
        return ['env_manager.type=numpy']
    return []


def _plan(request: UpdateRequest) -> LearnPlan:
    plan = request.mode.plan
    if plan is None or request.batch is None:
        raise TidalError(f"a seed group was asked for a '{request.kind}' update of a mode without loss stages")
    return plan(request.batch)


@dataclass
class Member:
    """One seed of the group: its run, and its global generators' state while the others have their turn."""

    seed: int
    run: Run
    rng: GeneratorSnapshot
    live: bool = True
    interrupted: Optional[RunInterrupted] = None
    requests: list[UpdateRequest] = field(default_factory=list)


class SeedGroup:
    """The seeds' runs, built one after the other (each from its own seed) and trained in lockstep."""

    def __init__(self, cfgs: Sequence[EasyDict], run_dirs: Sequence[Path], group_dir: Path, feed_cls: FeedClass,
                 max_env_step: Optional[int], max_train_iter: Optional[int],
                 resume_states: Optional[Sequence[Optional[dict[str, Any]]]] = None) -> None:
        self.group_dir = group_dir
        self.members: list[Member] = []
        check_groupable(cfgs[0], feed_cls)
        states = list(resume_states) if resume_states is not None else [None] * len(cfgs)
        try:
            for cfg, run_dir, state in zip(cfgs, run_dirs, states):
                run = Run(cfg, run_dir, feed_cls, max_env_step, max_train_iter, progress=False, resume_state=state,
                          record_updates=True)
                run.report.plot_secs = math.inf
                run.checkpoints.latest_name = STAGED
                self.members.append(Member(cfg.seed, run, GeneratorSnapshot()))  # the run seeded the generators
        except BaseException:
            for member in self.members:
                member.run.release_envs()
            raise
        self._restack()
        self._told_per_seed: set[str] = set()  # the modes whose forward was said to run per seed

    def _restack(self) -> None:
        """Stack the live seeds' weights (again, once a seed has left): later steps cost only the seeds that
        train; their forwards act through the new stack."""
        self.stacked = self._live()
        self.stack = SeedStack([member.run.policy for member in self.stacked])
        self._actors: dict[str, Optional[SeedActor]] = {}

    # ----- the loop ----------------------------------------------------------------------------
    def train(self, on_round: Optional[Callable[[dict[int, int]], None]] = None) -> list[Policy]:
        """Train every seed to its end; a signal checkpoints every seed and stops the group. `on_round` hears the
        env step of every seed after each round (a progress display, a worker's report to the group's driver)."""
        restore_signals = catch_signals([member.run.lockstep for member in self.members])
        try:
            for member in self.members:
                member.run.begin()
            while self._live():
                if any(member.run.checkpoint_due() for member in self._live()):
                    for member in self._live():  # every seed saves in the same round, so they resume together
                        member.run.request_checkpoint()
                self._evaluate_together([member for member in self._live() if member.run.eval_due()])
                endings = [(member, self._turn(member, member.run.top_of_loop)) for member in self._live()]
                ended = [(member, outcome) for member, outcome in endings if outcome is not None and member.live]
                # the seeds' last evaluations (of those whose last update was not evaluated), together
                self._evaluate_together([member for member, _ in ended if member.run.concluding_eval_due()])
                for member, outcome in ended:
                    self._finish(member, outcome)
                self._commit()
                self._collect_together()
                for member in self._live():
                    self._turn(member, member.run.feed_step)
                self._update()
                if on_round is not None:
                    on_round(self.env_steps())
        except BaseException as err:
            for member in self._live():
                self._stop(member, err)
            raise
        finally:
            restore_signals()
            self._commit()
        interrupted = [member.interrupted for member in self.members if member.interrupted is not None]
        if interrupted:
            raise group_interrupted(self.group_dir, interrupted[0].signum)
        return [member.run.policy for member in self.members]

    def env_steps(self) -> dict[int, int]:
        """Every seed's env step, by seed."""
        return {member.seed: member.run.env_step for member in self.members}

    def live_seeds(self) -> list[int]:
        return [member.seed for member in self._live()]

    def runs(self) -> list[Run]:
        """Every seed's run, as it stands."""
        return [member.run for member in self.members]

    def request_stop(self, signum: int) -> None:
        """Have every seed checkpoint at its next decision and stop, as `signum` arriving would."""
        for member in self.members:
            member.run.lockstep.signum = signum

    @classmethod
    def from_folders(cls, group_dir: Path, seeds: Sequence[int], loaded: Loaded = None) -> SeedGroup:
        """The seeds `seeds` of a group folder as their folders hold them (`seed_from_folder`), the group's budget
        from group.json."""
        spec = read_group(group_dir)
        cfgs, run_dirs, states = zip(*(seed_from_folder(group_dir, seed, loaded) for seed in seeds))
        feed_cls = feed_class(policy_class(cfgs[0].policy.type, cfgs[0].policy))
        return cls(cfgs, run_dirs, group_dir, feed_cls, spec['max_env_step'], spec['max_train_iter'],
                   resume_states=states)

    def _live(self) -> list[Member]:
        return [member for member in self.members if member.live]

    @contextmanager
    def _own_generators(self, member: Member, torch_only: bool = False) -> Iterator[None]:
        """The seed's global generators (`torch_only`: torch's, all that a plan draws from) in place for the block,
        put aside after it."""
        member.rng.restore(torch_only)
        try:
            yield
        finally:
            member.rng.take(torch_only)

    def _turn(self, member: Member, step: Any, own_generators: bool = True) -> Any:
        """`step()` for one seed; a seed that fails (a TidalError) stops alone, a signal stops it saved."""
        try:
            if not own_generators:
                return step()
            with self._own_generators(member):
                return step()
        except RunInterrupted as err:
            member.interrupted = err
            self._stop(member, err)
        except TidalError as err:
            self._stop(member, err)
            tqdm.write(f'tidal: seed {member.seed} stopped: {err}', file=sys.stderr)
        return None

    def _update(self) -> None:
        """Make the updates the live seeds' feeds asked for, the k-th of every seed together."""
        live = self._live()
        for member in live:
            member.requests = member.run.recorder.take() if member.run.recorder else []
        counts = {len(member.requests) for member in live}
        if len(counts) > 1:
            raise TidalError(f'the seeds of the group asked for different numbers of updates in one round '
                             f'({sorted(counts)}): their feeds are out of step')
        for index in range(counts.pop() if counts else 0):
            live = [member for member in live if member.live]
            if not live:
                return
            requests = {member.seed: member.requests[index] for member in live}
            kind = next(iter(requests.values())).kind
            if kind == 'start':
                for member in live:
                    self._turn(member, requests[member.seed].mode.reset, own_generators=False)
                continue
            stacked = self.stacked  # a seed that stops while its update is counted restacks the others
            plans = [None if member.seed not in requests else self._plan(member, requests[member.seed])
                     for member in stacked]
            batches = [None if member.seed not in requests else requests[member.seed].batch for member in stacked]
            infos = self.stack.update(plans, batches)
            for member, info in zip(stacked, infos):
                if member.seed in requests and info is not None:
                    self._count(member, requests[member.seed], info)

    def _plan(self, member: Member, request: UpdateRequest) -> LearnPlan:
        """The seed's plan of one update, any noise it draws drawn from the seed's own torch generators."""
        with self._own_generators(member, torch_only=True):
            return _plan(request)

    def _count(self, member: Member, request: UpdateRequest, info: dict[str, Any]) -> None:
        """Count a made update in the seed's own learner, whose hooks log it and schedule checkpoints."""
        learner = member.run.learner
        if request.kind == 'train':
            self._turn(member, lambda: learner.record(info), own_generators=False)
        else:
            self._turn(member, lambda: learner.record_phase(request.phase, request.mode, info), own_generators=False)

    def _commit(self) -> None:
        """Make the checkpoints the seeds staged this round their latest ones, all or none: a kill before the
        commit file exists keeps the previous round's, a kill after it is completed by `recover_checkpoints`.
        Each process of a group commits its own seeds, under a commit file of its own."""
        staged = [member.run.run_dir / 'ckpt' / STAGED for member in self.members]
        staged = [path for path in staged if path.is_file()]
        if not staged:
            return
        marker = self.group_dir / f'{COMMIT_PREFIX}.{self.members[0].seed}.json'
        marker.write_text(json.dumps([str(path.parent.parent.name) for path in staged]) + '\n')
        _sync(marker)
        for path in staged:
            os.replace(path, path.with_name(LATEST))
        marker.unlink()

    # ----- endings -----------------------------------------------------------------------------
    def _finish(self, member: Member, outcome: str) -> None:
        """A seed that reached its budget or stop value: its last evaluation and checkpoint, then it closes (unless
        those stopped it)."""
        self._turn(member, lambda: member.run.conclude(outcome))
        if member.live:
            self._close(member, outcome)

    def _stop(self, member: Member, err: BaseException) -> None:
        outcome, _ = member.run.failed(err) if not isinstance(err, RunInterrupted) else (f'stopped: {err}', err)
        self._close(member, outcome)

    def _close(self, member: Member, outcome: str) -> None:
        member.live = False
        if member in self.stacked:
            self.stack.release(self.stacked.index(member))
            if self._live():
                self._restack()
        member.run.close(outcome)

    # ----- acting for every seed at once ---------------------------------------------------------
    def _actor(self, mode: str) -> Optional[SeedActor]:
        """The stacked forward of `mode` ('collect' or 'eval') for the stacked seeds, None where their policy
        acts per seed (it states no `ActingSteps` for the mode)."""
        if mode not in self._actors:
            views = [member.run.policy.collect_mode if mode == 'collect' else member.run.policy.eval_mode
                     for member in self.stacked]
            steps = [view.steps for view in views]
            self._actors[mode] = None if any(step is None for step in steps) else SeedActor(
                self.stack, [step for step in steps if step is not None], mode)
        return self._actors[mode]

    def _acted(self, actor: SeedActor) -> None:
        """Say once, in one line, that a mode's forward runs per seed after all, and why."""
        if actor.why_per_seed is not None and actor.mode not in self._told_per_seed:
            self._told_per_seed.add(actor.mode)
            tqdm.write(f"tidal: the seeds' {actor.mode} forwards run one per seed: {actor.why_per_seed}",
                       file=sys.stderr)

    def _failed(self, members: Sequence[Member]) -> SeedFailed:
        """Stop the seed at a position of `members` that failed in a step made for all seeds, as its own step
        failing would."""
        def failed(index: int, err: Exception) -> None:
            member = members[index]
            self._turn(member, lambda: member.run.fail_step(err), own_generators=False)
        return failed

    def _collect_together(self) -> None:
        """Make the collections the live seeds' next feed steps start with, all seeds acting in one forward per
        env step, and hand each its sample; the warm-up's random actions and a policy that acts per seed collect
        in their feed steps."""
        actor, stacked = self._actor('collect'), self.stacked  # a seed that fails restacks the others
        if actor is None:
            return
        orders = [getattr(member.run.feed, 'collection', lambda budget: None)(member.run.env_budget())
                  if member.live else None for member in stacked]
        together = [order for order in orders if order is not None and not order[1]]
        if not together:
            return
        n_sample = together[0][0]
        collectors = [member.run.collector if order == (n_sample, False) and isinstance(member.run.collector,
                                                                                      SampleCollector) else None
                      for member, order in zip(stacked, orders)]
        samples = collect_together(collectors, actor, n_sample, self._failed(stacked))
        self._acted(actor)
        for member, collector, sample in zip(stacked, collectors, samples):
            if collector is not None and sample is not None and member.live:
                collector.hand(False, sample)

    def _evaluate_together(self, members: Sequence[Member]) -> None:
        """Evaluate `members` (live seeds whose evaluation is due) in one forward per env step and hand each
        seed's evaluator its result, which the seed's top of the loop then records."""
        if not members or self._actor('eval') is None:
            return
        for member in members:  # a NaN weight stops its seed before it acts, as its own evaluation would
            self._turn(member, member.run.check_finite, own_generators=False)
        actor, stacked = self._actor('eval'), self.stacked  # of the seeds still live
        due = [member for member in members if member.live]
        if actor is None or not due:
            return
        positions = {stacked.index(member): member for member in due}
        runs: list[Optional[EvalEpisodes]] = [None] * len(stacked)
        for index, member in positions.items():
            runs[index] = self._turn(member, functools.partial(_start_evaluation, member.run), own_generators=False)
        evaluate_together(runs, actor, self._failed(stacked))
        self._acted(actor)
        for index, member in positions.items():
            episodes = runs[index]
            if member.live and episodes is not None:
                member.run.evaluator.hand(member.run.learner.train_iter, member.run.env_step, episodes.result())


def seed_from_folder(group_dir: Path, seed: int, loaded: Loaded = None
                     ) -> tuple[EasyDict, Path, Optional[dict[str, Any]]]:
    """(config, run folder, latest checkpoint) of a group's seed as its folder holds them: its saved config, and its
    latest checkpoint where it has one (a resumed seed), taken from `loaded` where a resume already read it."""
    run_dir = seed_folder(group_dir, seed)
    cfg = load_config(read_config(str(run_dir / 'config.yaml')))
    if loaded is not None and seed in loaded:
        return cfg, run_dir, loaded[seed]
    latest = run_dir / 'ckpt' / LATEST
    return cfg, run_dir, load_checkpoint(latest) if latest.is_file() else None


def group_interrupted(group_dir: Path, signum: int) -> RunInterrupted:
    """What a group stopped by `signum` raises, every seed checkpointed."""
    return RunInterrupted(f'{signal.Signals(signum).name}: every seed saved a checkpoint; continue with: '
                          f'tidal resume {group_dir}', signum)


def recover_checkpoints(group_dir: Path, run_dirs: Sequence[Path]) -> None:
    """Finish or undo the commits a killed group left: the staged checkpoints a commit file names become the
    latest (all were written before it), the others are dropped."""
    committed: set[str] = set()
    markers = sorted(group_dir.glob(f'{COMMIT_PREFIX}*.json'))
    for marker in markers:
        try:
            committed.update(json.loads(marker.read_text()))
        except (OSError, ValueError):  # a marker cut short by the kill: its round never began to commit
            pass
    for run_dir in run_dirs:
        staged = run_dir / 'ckpt' / STAGED
        if staged.is_file():
            if run_dir.name in committed:
                os.replace(staged, staged.with_name(LATEST))
            else:
                staged.unlink()
    for marker in markers:
        marker.unlink(missing_ok=True)


def _sync(path: Path) -> None:
    with open(path, 'rb') as file:
        os.fsync(file.fileno())


def _start_evaluation(run: Run) -> EvalEpisodes:
    """Start `run`'s evaluation episodes, recording the first where a video is due."""
    return run.evaluator.start(run.learner.train_iter, run.env_step, run.evaluation.videos_due(run.env_step))
