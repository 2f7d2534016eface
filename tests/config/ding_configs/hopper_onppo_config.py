from easydict import EasyDict
import torch.nn as nn

collector_env_num = 8
evaluator_env_num = 8
hopper_onppo_config = dict(
    exp_name='hopper_onppo_seed0',
    env=dict(
        env_id='Hopper-v3',
        norm_obs=dict(use_norm=False, ),
        norm_reward=dict(use_norm=False, ),
        collector_env_num=collector_env_num,
        evaluator_env_num=evaluator_env_num,
        n_evaluator_episode=10,
        stop_value=3000,
    ),
    policy=dict(
        cuda=True,
        recompute_adv=True,
        action_space='continuous',
        model=dict(
            obs_shape=11,
            action_shape=3,
            action_space='continuous',
            # a narrow actor and a wider critic, each on its own encoder
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            actor_head_layer_num=0,
            critic_head_hidden_size=128,
            critic_head_layer_num=2,
            activation=nn.Tanh(),
            bound_type='tanh',
        ),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=3e-4,
            # decay the learning rate linearly to zero over 1000 collections
            lr_scheduler=dict(epoch_num=1000, min_lr_lambda=0),
            value_weight=0.5,
            entropy_weight=0.001,
            clip_ratio=0.2,
            adv_norm=True,
            value_norm=True,
            # for on-policy training, ignore_done is usually False
            ignore_done=False,
            grad_clip_type='clip_norm',
            grad_clip_value=0.5,
        ),
        collect=dict(
            collector_env_num=collector_env_num,
            n_sample=2048,
            unroll_len=1,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=500, )),
    ),
)
hopper_onppo_config = EasyDict(hopper_onppo_config)
main_config = hopper_onppo_config

hopper_onppo_create_config = dict(
    env=dict(
        type='mujoco',
        import_names=['dizoo.mujoco.envs.mujoco_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='ppo', ),
)
hopper_onppo_create_config = EasyDict(hopper_onppo_create_config)
create_config = hopper_onppo_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial_onpolicy -c hopper_onppo_config.py -s 0`
    from ding.entry import serial_pipeline_onpolicy
    serial_pipeline_onpolicy([main_config, create_config], seed=0, max_env_step=int(1e7))
