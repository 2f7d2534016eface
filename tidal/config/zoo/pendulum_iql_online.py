"""IQL on Pendulum-v1 going on online from the offline run `pendulum_iql` (its folder, as `tidal train pendulum_iql`
names it), with that run's dataset in its replay: `tidal train pendulum_iql_online --max-env-step 20000`."""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='pendulum_iql_online',
    env=dict(
        env_id='Pendulum-v1',
        evaluator_env_num=5,
        n_evaluator_episode=5,
    ),
    policy=dict(
        learn=dict(init_checkpoint='pendulum_iql', update_per_collect=1),
        collect=dict(data_path='tidal/pendulum/medium-replay-v0', n_sample=1),
        eval=dict(evaluator=dict(eval_freq=1000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='iql_online'),
)
