"""TD3 on Pendulum-v1 with rl-baselines3-zoo's settings of before January 2024: [400, 300] networks, lr 1e-3, gamma
0.98, 10k random warm-up steps, exploration noise 0.1, and after each 200-step episode as many updates as it had
steps. The zoo now updates once per env step (`policy.collect.n_sample=1`, `policy.learn.update_per_collect=1`), as
the side-by-side benchmark (benchmarks/td3.py) sets it."""
from typing import Any

main_config: dict[str, Any] = dict(
    exp_name='pendulum_td3',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        random_collect_size=10_000,
        model=dict(actor_hidden_sizes=[400, 300], critic_hidden_sizes=[400, 300]),
        learn=dict(
            update_per_collect=200,
            batch_size=256,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            discount_factor=0.98,
            # Pendulum only ends by its time limit, which tidal bootstraps through: no ignore_done needed
            ignore_done=False,
        ),
        collect=dict(n_sample=200, noise_sigma=0.1),
        eval=dict(evaluator=dict(eval_freq=1000, eval_freq_env_steps=2000)),
        other=dict(replay_buffer=dict(replay_buffer_size=200_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='td3'),
)
