from easydict import EasyDict

# DI-engine's off-policy PPG: the policy phase samples from a policy buffer, the value from its own.
cartpole_ppg_offpolicy_config = dict(
    exp_name='cartpole_ppg_offpolicy_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[64, 64, 128],
            critic_head_hidden_size=128,
            actor_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=4,
            batch_size=64,
            learning_rate=1e-3,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
            aux_freq=4,
        ),
        collect=dict(
            n_sample=128,
            unroll_len=1,
            discount_factor=0.9,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=40, )),
        other=dict(
            replay_buffer=dict(
                multi_buffer=True,
                policy=dict(replay_buffer_size=200, max_use=8, ),
                value=dict(replay_buffer_size=2000, max_use=64, ),
            ),
        ),
    ),
)
cartpole_ppg_offpolicy_config = EasyDict(cartpole_ppg_offpolicy_config)
main_config = cartpole_ppg_offpolicy_config
cartpole_ppg_offpolicy_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppg_offpolicy'),
    replay_buffer=dict(
        policy=dict(type='advanced'),
        value=dict(type='advanced'),
    )
)
cartpole_ppg_offpolicy_create_config = EasyDict(cartpole_ppg_offpolicy_create_config)
create_config = cartpole_ppg_offpolicy_create_config

if __name__ == "__main__":
    # DI-engine trains it with its own entry for the two buffers
    from ding.entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
