# cartpole_my_dqn.py
main_config = dict(
    exp_name='cartpole_my_dqn',
    env=dict(env_id='CartPole-v1', collector_env_num=1, evaluator_env_num=5, n_evaluator_episode=5,
             stop_value=500),
    policy=dict(
        random_collect_size=1000,
        learn=dict(update_per_collect=1, batch_size=64),
        collect=dict(n_sample=1, epsilon=0.1),  # one env step, then one update
        eval=dict(evaluator=dict(eval_freq=2000)),
    ),
    import_names=['my_dqn'],  # my_dqn.py, beside this file
)
create_config = dict(env=dict(type='gym'), env_manager=dict(type='base'), policy=dict(type='my_dqn'))
