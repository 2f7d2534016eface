"""Discrete CQL on CartPole-v1 from a fixed dataset: the `tidal/cartpole/medium-replay-v0` that
`tidal build-datasets cartpole_dqn` builds (the replay of a DQN run stopped at a third of its expert's return;
`policy.collect.data_path` names another level). DI-engine's cartpole_cql settings on DQN's network: 3-step
windows, gamma 0.97, CQL weight 4, batch 64, Adam at 1e-3, the target copied every 100 updates. Budget in train
iterations: `tidal train cartpole_discrete_cql --max-train-iter 10000`.

Needs the `minari` extra (`pip install -e ".[minari]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='cartpole_discrete_cql',
    env=dict(
        env_id='CartPole-v1',
        evaluator_env_num=5,
        n_evaluator_episode=5,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[128, 128, 64], dueling=True),
        nstep=3,
        discount_factor=0.97,
        learn=dict(batch_size=64, learning_rate=1e-3, target_update_freq=100, cql_weight=4.0),
        collect=dict(data_path='tidal/cartpole/medium-replay-v0'),
        eval=dict(evaluator=dict(eval_freq=1000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_cql'),
)
