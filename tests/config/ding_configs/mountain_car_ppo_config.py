from easydict import EasyDict
from torch import nn

mountain_car_ppo_config = dict(
    exp_name='mountain_car_ppo_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=-120,
    ),
    policy=dict(
        cuda=False,
        action_space='discrete',
        recompute_adv=True,
        model=dict(
            obs_shape=2,
            action_shape=3,
            action_space='discrete',
            share_encoder=True,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            actor_head_layer_num=1,
            critic_head_hidden_size=64,
            critic_head_layer_num=1,
            # an activation class works as well as an instance
            activation=nn.Tanh,
        ),
        learn=dict(
            epoch_per_collect=4,
            batch_size=128,
            learning_rate=5e-4,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
            adv_norm=True,
            value_norm=False,
            ppo_param_init=True,
            grad_clip_type='clip_norm',
            grad_clip_value=0.5,
            ignore_done=False,
        ),
        collect=dict(
            n_sample=1024,
            unroll_len=1,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=100, ), ),
    ),
)
mountain_car_ppo_config = EasyDict(mountain_car_ppo_config)
main_config = mountain_car_ppo_config
mountain_car_ppo_create_config = dict(
    env=dict(
        type='mountain_car',
        import_names=['dizoo.classic_control.mountain_car.envs.mtcar_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)
mountain_car_ppo_create_config = EasyDict(mountain_car_ppo_create_config)
create_config = mountain_car_ppo_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial_onpolicy -c mountain_car_ppo_config.py -s 0`
    from ding.entry import serial_pipeline_onpolicy
    serial_pipeline_onpolicy((main_config, create_config), seed=0)
