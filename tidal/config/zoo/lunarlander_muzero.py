"""MuZero on LunarLander-v3 (discrete, extra `box2d`): 8 envs, 50 simulations per move, 5 unrolled steps.

Rewards reach +-100 in one step (a landing or a crash) and returns a few hundred, so the reward support
covers h(100) = 9.1 and the value support h(1000) = 30.7.
"""

main_config = dict(
    exp_name='lunarlander_muzero',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=200,
    ),
    policy=dict(
        model=dict(latent_size=128, hidden_sizes=[256, 256], value_support_size=32, reward_support_size=10),
        learn=dict(batch_size=256, update_per_collect=16),
        collect=dict(n_sample=64, discount_factor=0.997, temperatures=[1.0, 0.5, 0.25],
                     temperature_env_steps=[100_000, 200_000]),
        repr=dict(num_unroll_steps=5, td_steps=10, learning_rate=1e-3, target_update_period=200),
        search=dict(num_simulations=50),
        # 16 updates per 64 env steps: evaluate every 10240 env steps
        eval=dict(evaluator=dict(eval_freq=2560)),
        other=dict(replay_buffer=dict(replay_buffer_size=300_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='muzero'),
)
