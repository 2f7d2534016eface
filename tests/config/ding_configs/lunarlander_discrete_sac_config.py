from easydict import EasyDict

lunarlander_sac_config = dict(
    exp_name='lunarlander_discrete_sac_seed0',
    env=dict(
        env_id='LunarLander-v2',
        collector_env_num=2,
        evaluator_env_num=1,
        n_evaluator_episode=1,
        stop_value=200,
    ),
    policy=dict(
        cuda=False,
        on_policy=False,
        random_collect_size=50,
        model=dict(
            obs_shape=8,
            action_shape=4,
            twin_critic=True,
            encoder_hidden_size_list=[16],
            actor_head_hidden_size=16,
            critic_head_hidden_size=16,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=16,
            learning_rate_q=1e-3,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_entropy=-2,
            ignore_done=False,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=True,
        ),
        collect=dict(n_sample=10, ),
        eval=dict(evaluator=dict(eval_freq=100, ), ),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, ), ),
    ),
)
lunarlander_sac_config = EasyDict(lunarlander_sac_config)
main_config = lunarlander_sac_config

lunarlander_sac_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='discrete_sac'),
)
lunarlander_sac_create_config = EasyDict(lunarlander_sac_create_config)
create_config = lunarlander_sac_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial -c lunarlander_discrete_sac_config.py -s 0`
    from ding.entry import serial_pipeline
    serial_pipeline([main_config, create_config], seed=0)
