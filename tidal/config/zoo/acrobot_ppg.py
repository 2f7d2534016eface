"""PPG on Acrobot-v1 with the policy's defaults: only the env is set, a task nobody tuned PPG for."""

main_config = dict(
    exp_name='acrobot_ppg',
    env=dict(
        env_id='Acrobot-v1',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=10,
        stop_value=-100,
    ),
    policy=dict(),
)

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ppg'),
)
