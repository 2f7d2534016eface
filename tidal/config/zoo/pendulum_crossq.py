"""CrossQ on Pendulum-v1 with the RL Zoo's CrossQ settings for it: [256, 256] actor and critics, the actor
stepping every second critic step, 100 random steps first."""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='pendulum_crossq',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        random_collect_size=100,
        model=dict(
            actor_hidden_sizes=[256, 256],
            critic_hidden_sizes=[256, 256],
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            actor_update_freq=2,
            # Pendulum only ends by its time limit, which tidal bootstraps through
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
    policy=dict(type='crossq'),
)
