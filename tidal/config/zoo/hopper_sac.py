"""SAC on Hopper-v5 (MuJoCo) with the settings of Stable-Baselines3's zoo: one update per env step,
[256, 256] networks, batch 256, lr 3e-4, 10k random warm-up steps.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_sac',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        # (gymnasium's reward threshold for Hopper: its registered measure of a solved task)
        stop_value=3800,
    ),
    policy=dict(
        random_collect_size=10_000,
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
            # Hopper ends by falling (terminated: no bootstrap) or by its 1000-step limit (truncated: bootstrap)
            ignore_done=False,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=5000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
)
