"""Soft Q-learning on CartPole-v1 with DI-engine's `cartpole_sql` settings: temperature alpha 0.12, a dueling head
on [128, 128, 64], 8 envs of one step each per collection and 3 updates after it, the target network copied every
100 updates, epsilon from 0.95 to 0.1 (exponential, 10k env steps) beside the Boltzmann sampling. The head is
tidal's default, V and A straight from the encoder (25,603 parameters); DI-engine's file gives each a hidden layer
of 64 first (head_layer_num=1, 33,923)."""

main_config = dict(
    exp_name='cartpole_sql',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[128, 128, 64], dueling=True),
        nstep=1,
        discount_factor=0.97,
        learn=dict(update_per_collect=3, batch_size=64, learning_rate=0.001, target_update_freq=100, alpha=0.12),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(
            eps=dict(type='exp', start=0.95, end=0.1, decay=10_000),
            replay_buffer=dict(replay_buffer_size=20_000),
        ),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='sql'),
)
