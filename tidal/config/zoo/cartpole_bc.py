"""Behaviour cloning of discrete actions on CartPole-v1 from a fixed dataset (`tidal/cartpole/medium-replay-v0`,
which `tidal build-datasets cartpole_dqn` builds): logits on DQN's [128, 128, 64] network fitted by cross-entropy,
the baseline discrete CQL is measured against. Budget in train iterations:
`tidal train cartpole_bc --max-train-iter 10000`.

Needs the `minari` extra (`pip install -e ".[minari]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='cartpole_bc',
    env=dict(
        env_id='CartPole-v1',
        evaluator_env_num=5,
        n_evaluator_episode=5,
    ),
    policy=dict(
        continuous=False,
        model=dict(encoder_hidden_size_list=[128, 128, 64], dueling=False),
        learn=dict(batch_size=64, learning_rate=1e-3),
        collect=dict(data_path='tidal/cartpole/medium-replay-v0', normalize_states=False),
        eval=dict(evaluator=dict(eval_freq=1000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='bc'),
)
