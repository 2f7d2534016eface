"""Discrete SAC on CartPole-v1."""

main_config = dict(
    exp_name='cartpole_discrete_sac',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(
            actor_hidden_sizes=[64, 64],
            critic_hidden_sizes=[64, 64],
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=64,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            # with two actions the paper's 0.98 * log(2) keeps the policy almost uniform; CartPole
            # needs a near-deterministic policy, so aim for a lower entropy
            target_entropy=0.3,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    ),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
)
