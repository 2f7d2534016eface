"""TAAC on Pendulum-v1: SAC's pendulum settings, trained on replayed sequences of 4 steps."""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='pendulum_taac',
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
            # 64 sequences of 4 steps: 256 transitions per update, as SAC's batch
            batch_size=64,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=1, unroll_len=4),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='taac'),
)
