"""SAC on Pendulum-v1: one update per env step, the settings that learn within 10-20k steps."""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='pendulum_sac',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(
            actor_hidden_sizes=[256, 256],
            critic_hidden_sizes=[256, 256],
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            # Pendulum only ends by its time limit, which tidal bootstraps through: no ignore_done needed
            ignore_done=False,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
)
