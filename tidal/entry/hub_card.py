"""The model card (README.md) of a Hub export: YAML metadata the Hub and the Open RL Leaderboard read, then a
body saying what agent.pt is, how it was scored and how to push the folder.

The Hub lists a model under reinforcement learning by its `model-index` (task reinforcement-learning, the env id
as the dataset, `mean_reward` as "mean +/- std"); the leaderboard picks up a model tagged `reinforcement-learning`
and with its env id. Written as plain YAML, so writing it needs no huggingface_hub.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from tidal.entry.hub_eval import AgentScore


@dataclass(frozen=True)
class CardFacts:
    algorithm: str  # the policy type, e.g. 'ppo'
    env_id: str
    env_kwargs: Mapping[str, Any]
    score: AgentScore
    file_lines: Sequence[str]  # what agent.pt takes and gives, and its parity line
    checkpoint: str  # the checkpoint's path inside the run folder


def card_metadata(facts: CardFacts) -> dict[str, Any]:
    """The YAML front matter, as the Hub's model-card metadata spells it."""
    return {
        'library_name': 'tidal',
        'tags': ['reinforcement-learning', facts.env_id, 'tidal', facts.algorithm],
        'model-index': [{
            'name': facts.algorithm.upper(),
            'results': [{
                'task': {'type': 'reinforcement-learning', 'name': 'reinforcement-learning'},
                'dataset': {'type': facts.env_id, 'name': facts.env_id},
                'metrics': [{'type': 'mean_reward', 'name': 'mean_reward', 'value': facts.score.mean_reward,
                             'verified': False}],
            }],
        }],
    }


def model_card(facts: CardFacts) -> str:
    front = yaml.safe_dump(card_metadata(facts), sort_keys=False, allow_unicode=True)
    return f'---\n{front}---\n\n{_body(facts)}'


def _body(facts: CardFacts) -> str:
    score, env = facts.score, facts.env_id
    episodes = len(score.returns)
    made = f"gymnasium.make('{env}'{_kwargs(facts.env_kwargs)})"
    returns = ', '.join(f'{value:g}' for value in score.returns)
    kwargs_note = ('' if not facts.env_kwargs else
                   ' The run made its env with keyword arguments the leaderboard does not pass; agent.pt was '
                   'scored with them.')
    file_lines = '\n'.join(f'    {line.strip()}' for line in facts.file_lines)
    return f'''# {facts.algorithm.upper()} on {env}, trained with tidal

A {facts.algorithm} agent for `{env}`, trained with tidal and exported from `{facts.checkpoint}`.

## Files

- `agent.pt`: the deterministic acting policy as one TorchScript file. It takes a batch of raw observations,
  as `{made}` gives them, and returns the actions that env takes: what tidal does between the two
  (observation normalisation, the map of actions onto the env's bounds) is built in. Before it was written it
  was checked against tidal's eval mode:

{file_lines}

- `config.yaml`: the run's resolved config; `tidal train config.yaml` trains it again.
- `replay.mp4`: the first evaluation episode below, played by `agent.pt`.

## Evaluation

`mean_reward` {score.mean_reward} is the mean and (population) standard deviation of the returns of
{episodes} episodes of `agent.pt` itself on `{made}`, acting deterministically, episode i reset with
seed {score.seed} + i.{kwargs_note} Returns: {returns}.

## Use

```python
import gymnasium, torch

agent = torch.jit.load('agent.pt')
env = gymnasium.make('{env}'{_kwargs(facts.env_kwargs)})
obs, _ = env.reset(seed={score.seed})
done = False
while not done:
    action = agent(torch.as_tensor(obs)[None])[0].numpy()
    obs, reward, terminated, truncated, _ = env.step(action)
    done = terminated or truncated
```

## Push to the Hub

```python
from huggingface_hub import HfApi

api = HfApi()
api.create_repo('USER/{facts.algorithm}-{env.replace('/', '-')}', exist_ok=True)
api.upload_folder(repo_id='USER/{facts.algorithm}-{env.replace('/', '-')}', folder_path='.')
```

Tagged `reinforcement-learning` and `{env}`, a public repo with `agent.pt` at its root is picked up and
scored by the [Open RL Leaderboard](https://huggingface.co/spaces/open-rl-leaderboard/leaderboard).
'''


def _kwargs(env_kwargs: Mapping[str, Any]) -> str:
    return ''.join(f', {key}={value!r}' for key, value in env_kwargs.items())
