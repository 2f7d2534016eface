"""`tidal export RUN --hub DIR`: the folder a Hugging Face model repo holds, as the Hub and the Open RL
Leaderboard read it.

DIR gets `agent.pt` at its root (the TorchScript export, taking the raw env's observations: checked against
the eval mode like every export), `README.md` (the model card, its mean_reward scored by agent.pt itself on the
raw env), the run's `config.yaml` and `replay.mp4`. Pushing is huggingface_hub's `upload_folder` on DIR.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from tidal.base.errors import TidalError
from tidal.entry.export import ExportResult, export_policy
from tidal.entry.hub_card import CardFacts, model_card
from tidal.entry.hub_eval import AgentScore, raw_observation_dtype, require_frames, require_mp4, score_agent
from tidal.entry.saved_run import saved_run
from tidal.registry import ENV_REGISTRY

HUB_FILES = ('agent.pt', 'README.md', 'config.yaml', 'replay.mp4')


@dataclass(frozen=True)
class HubExport:
    directory: Path
    env_id: str
    export: ExportResult
    score: AgentScore

    def summary(self) -> str:
        episodes, first = len(self.score.returns), self.score.seed
        lines = self.export.summary().splitlines()[1:]  # the file's inputs, outputs, notes and parity
        return '\n'.join([f'wrote a Hugging Face model folder for {self.export.checkpoint}: {self.directory} '
                          f"({', '.join(HUB_FILES)})", *lines,
                          f"mean_reward {self.score.mean_reward} over {episodes} episodes of agent.pt on "
                          f"gymnasium.make('{self.env_id}'), seeds {first}..{first + episodes - 1}"])


def export_hub(source: str | os.PathLike, directory: str | os.PathLike, episodes: int = 10,
               seed: Optional[int] = None) -> HubExport:
    """Write the model-repo folder of the policy of a run folder, or of a checkpoint inside one, into
    `directory`; agent.pt is scored on `episodes` episodes seeded from `seed` (default: the run's seed)."""
    saved = saved_run(source, 'export')
    run_dir, ckpt, cfg = saved.run_dir, saved.checkpoint, saved.cfg
    env_id, env_kwargs = cfg.env.env_id, dict(cfg.env.get('env_kwargs') or {})
    adapter_env = ENV_REGISTRY.build(cfg.env.type, cfg.env).make('evaluator')
    try:
        obs_dtype = raw_observation_dtype(env_id, env_kwargs, adapter_env)
    finally:
        adapter_env.close()
    require_mp4()
    require_frames(env_id, env_kwargs)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise TidalError(f"--hub '{out}' is a file: give a folder for the model repo's files")
    with _staged(out) as staging:
        agent = staging / 'agent.pt'
        exported = export_policy(ckpt, 'torchscript', agent, obs_dtype=obs_dtype)
        inputs = [spec.name for spec in exported.file.inputs]
        outputs = [spec.name for spec in exported.file.outputs]
        if inputs != ['obs'] or outputs != ['action']:
            raise TidalError(f"policy '{cfg.policy.type}' cannot go to the Open RL Leaderboard: its agent.pt would "
                             f"take {', '.join(inputs)} and give {', '.join(outputs)}, where the leaderboard feeds "
                             f"observations only and steps the env with the one output")
        score = score_agent(agent, env_id, env_kwargs, episodes, cfg.seed if seed is None else seed,
                            staging / 'replay.mp4')
        shutil.copyfile(run_dir / 'config.yaml', staging / 'config.yaml')
        facts = CardFacts(cfg.policy.type, env_id, env_kwargs, score, exported.summary().splitlines()[1:],
                          os.path.relpath(ckpt.resolve(), run_dir.resolve()))
        (staging / 'README.md').write_text(model_card(facts), encoding='utf-8')
    return HubExport(out, env_id, dataclasses.replace(exported, path=out / 'agent.pt'), score)


@contextmanager
def _staged(directory: Path) -> Iterator[Path]:
    """A hidden sibling folder of `directory` to write the export into, which becomes `directory` (or, where that
    exists, moves its files into it) only once every file is written; a failed export leaves nothing behind."""
    directory = directory.resolve()  # '.' has a name and a parent
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = directory.with_name(f'.{directory.name}.{os.getpid()}.tmp')
    shutil.rmtree(staging, ignore_errors=True)  # a crashed export's, of a process with the same id
    staging.mkdir()
    try:
        yield staging
        if directory.is_dir():  # an existing folder (a clone of the model repo, say) keeps its other files
            for name in HUB_FILES:
                os.replace(staging / name, directory / name)
        else:
            os.replace(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
