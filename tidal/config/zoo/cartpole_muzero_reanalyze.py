"""MuZero Reanalyze on CartPole-v1: cartpole_muzero, with a quarter of every batch re-searched by the target model.

The reanalyzed quarter gets fresh policy targets and 5-step value targets bootstrapped from the target
model (MuZero Unplugged, arXiv 2104.06294); n shrinks with a sample's age (EfficientZero's dynamic
horizon). The updates are cartpole_muzero's, so the two differ only in the targets.
"""

main_config = dict(
    exp_name='cartpole_muzero_reanalyze',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=500,
    ),
    policy=dict(
        model=dict(latent_size=64, hidden_sizes=[128, 128], value_support_size=25, reward_support_size=5),
        priority=False,  # as cartpole_muzero
        learn=dict(batch_size=256, update_per_collect=16),
        collect=dict(n_sample=64, discount_factor=0.997, temperatures=[1.0, 0.5, 0.25],
                     temperature_env_steps=[8_000, 14_000]),
        repr=dict(
            num_unroll_steps=5,
            td_steps=10,
            learning_rate=3e-3,
            reanalyze_ratio=0.25,
            reanalyze_td_steps=5,
            reanalyze_max_bootstrap_age=10_000,
            reanalyze_batch_size=64,
            target_update_period=100,
        ),
        search=dict(num_simulations=25),
        # 16 updates per 64 env steps: evaluate every 1024 env steps
        eval=dict(evaluator=dict(eval_freq=256)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='muzero'),
)
