# cartpole_reinforce.py
main_config = dict(
    exp_name='cartpole_reinforce',
    env=dict(env_id='CartPole-v1', collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5,
             stop_value=500),
    policy=dict(
        model=dict(encoder_hidden_sizes=[64, 64]),
        learn=dict(batch_size=256, learning_rate=3e-3),
        collect=dict(n_sample=256),  # 32 steps of each of the 8 envs per rollout
        eval=dict(evaluator=dict(eval_freq=20)),  # one update per rollout: every 5120 env steps
    ),
)
create_config = dict(env=dict(type='gym'), env_manager=dict(type='base'), policy=dict(type='reinforce'))
