from easydict import EasyDict

nstep = 1
lunarlander_discrete_sac_config = dict(
    exp_name='lunarlander_discrete_sac_seed0',
    env=dict(
        env_id='LunarLander-v2',
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        cuda=True,
        random_collect_size=1000,
        nstep=nstep,
        model=dict(
            obs_shape=8,
            action_shape=4,
            twin_critic=True,
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=16,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            alpha=0.2,
            auto_alpha=True,
            # (float) Target entropy as a fraction of the uniform policy's, DI-engine style: -log(1/4) * 0.3.
            target_entropy=0.41,
            ignore_done=False,
        ),
        collect=dict(
            n_sample=64,
            unroll_len=1,
        ),
        eval=dict(evaluator=dict(eval_freq=1000, ), ),
        other=dict(
            eps=dict(
                type='linear',
                start=1.0,
                end=0.1,
                decay=50000,
            ),
            replay_buffer=dict(replay_buffer_size=100000, ),
        ),
    ),
)
lunarlander_discrete_sac_config = EasyDict(lunarlander_discrete_sac_config)
main_config = lunarlander_discrete_sac_config

lunarlander_discrete_sac_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='discrete_sac'),
)
lunarlander_discrete_sac_create_config = EasyDict(lunarlander_discrete_sac_create_config)
create_config = lunarlander_discrete_sac_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial -c lunarlander_discrete_sac_config.py -s 0`
    from ding.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
