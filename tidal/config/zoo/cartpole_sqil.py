"""SQIL on soft Q-learning on CartPole-v1, with DI-engine's `cartpole_sqil` settings (its `cartpole_sql` ones):
imitation of an expert from its demonstrations, without the env's reward.

As in DI-engine, `policy.collect.model_path` names the expert: here the run folder that `tidal train cartpole_dqn`
makes, whose best checkpoint plays `collect.expert_episodes` episodes before training. A demonstration file from
`tidal collect-demos` works too: `--set policy.expert_data_path=FILE`.
"""

main_config = dict(
    exp_name='cartpole_sqil',
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
        collect=dict(n_sample=8, model_path='cartpole_dqn', expert_episodes=10),
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
    policy=dict(type='sqil'),
)
