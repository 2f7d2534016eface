"""TD3 on Hopper-v5 (MuJoCo) with rl-baselines3-zoo's MuJoCo settings: [400, 300] networks, lr 1e-3, batch 256,
10k random warm-up steps, exploration noise 0.1, one update per env step.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='hopper_td3',
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
        model=dict(actor_hidden_sizes=[400, 300], critic_hidden_sizes=[400, 300]),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            discount_factor=0.99,
            # Hopper ends by falling (terminated: no bootstrap) or by its 1000-step limit (truncated: bootstrap)
            ignore_done=False,
        ),
        collect=dict(n_sample=1, noise_sigma=0.1),
        eval=dict(evaluator=dict(eval_freq=5000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='td3'),
)
