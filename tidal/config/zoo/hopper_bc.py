"""Behaviour cloning on Hopper-v5 from a fixed dataset: the D4RL-like `mujoco/hopper/medium-v0` that `tidal build-datasets`
builds from SAC runs (`policy.collect.data_path` names another level). The algorithm's defaults are its paper's
(CORL's) locomotion settings. Budget in train iterations: `tidal train hopper_bc --max-train-iter 100000`.

Needs the `mujoco` and `minari` extras (`pip install -e ".[mujoco,minari]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_bc',
    env=dict(
        env_id='Hopper-v5',
        evaluator_env_num=5,
        n_evaluator_episode=10,
    ),
    policy=dict(
        collect=dict(data_path='mujoco/hopper/medium-v0'),
        eval=dict(evaluator=dict(eval_freq=5000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='bc'),
)
