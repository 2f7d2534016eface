"""ReBRAC on Pendulum-v1 from a fixed dataset: the medium-replay data that `tidal build-datasets pendulum_sac` builds
(the replay of a SAC run stopped at a third of its expert's return). Budget in train iterations:
`tidal train pendulum_rebrac --max-train-iter 20000`."""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='pendulum_rebrac',
    env=dict(
        env_id='Pendulum-v1',
        evaluator_env_num=5,
        n_evaluator_episode=5,
    ),
    policy=dict(
        collect=dict(data_path='tidal/pendulum/medium-replay-v0'),
        eval=dict(evaluator=dict(eval_freq=1000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='rebrac'),
)
