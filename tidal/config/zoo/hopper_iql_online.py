"""IQL on Hopper-v5 going on online from the offline run `hopper_iql` (its folder, as `tidal train hopper_iql` names
it), with that run's dataset (`mujoco/hopper/medium-v0`) in its replay: one update per env step, no random warm-up,
as the paper fine-tunes (section 5.3). `tidal train hopper_iql_online --max-env-step 100000`.

Needs the `mujoco` and `minari` extras (`pip install -e ".[mujoco,minari]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_iql_online',
    env=dict(
        env_id='Hopper-v5',
        evaluator_env_num=5,
        n_evaluator_episode=5,
    ),
    policy=dict(
        learn=dict(init_checkpoint='hopper_iql', update_per_collect=1),
        collect=dict(data_path='mujoco/hopper/medium-v0', n_sample=1),
        eval=dict(evaluator=dict(eval_freq=5000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='iql_online'),
)
