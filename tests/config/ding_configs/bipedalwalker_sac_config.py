from easydict import EasyDict

bipedalwalker_sac_config = dict(
    exp_name='bipedalwalker_sac_seed0',
    env=dict(
        env_id='BipedalWalker-v3',
        collector_env_num=1,
        evaluator_env_num=1,
        # (bool) Scale output action into legal range.
        act_scale=True,
        n_evaluator_episode=1,
        stop_value=300,
        rew_clip=True,
        # The path to save the game replay
        replay_path=None,
    ),
    policy=dict(
        cuda=True,
        random_collect_size=50,
        model=dict(
            obs_shape=24,
            action_shape=4,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=16,
            critic_head_hidden_size=16,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=16,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=True,
            value_network=False,
            reparameterization=True,
        ),
        collect=dict(n_sample=10, ),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, ), ),
    ),
)
bipedalwalker_sac_config = EasyDict(bipedalwalker_sac_config)
main_config = bipedalwalker_sac_config
bipedalwalker_sac_create_config = dict(
    env=dict(
        type='bipedalwalker',
        import_names=['dizoo.box2d.bipedalwalker.envs.bipedalwalker_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
    replay_buffer=dict(type='naive', ),
)
bipedalwalker_sac_create_config = EasyDict(bipedalwalker_sac_create_config)
create_config = bipedalwalker_sac_create_config

if __name__ == '__main__':
    from ding.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
