from easydict import EasyDict
import torch.nn as nn

# Phasic Policy Gradient (arXiv 2009.04416), on-policy: a policy phase of PPO epochs, then every
# aux_freq collections an auxiliary phase that distils the value into the policy network.
cartpole_ppg_config = dict(
    exp_name='cartpole_ppg_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        on_policy=True,
        action_space='discrete',
        model=dict(
            obs_shape=4,
            action_shape=2,
            action_space='discrete',
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            actor_head_layer_num=2,
            critic_head_hidden_size=64,
            critic_head_layer_num=1,
            activation=nn.Tanh(),
        ),
        learn=dict(
            actor_epoch_per_collect=2,
            critic_epoch_per_collect=2,
            batch_size=64,
            learning_rate=5e-4,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
            value_norm=False,
            adv_norm=True,
            # auxiliary phase: every aux_freq collections, aux_train_epoch epochs, behaviour-cloning weight
            aux_freq=2,
            aux_train_epoch=4,
            aux_bc_weight=1.0,
            grad_clip_type='clip_norm',
            grad_clip_value=0.5,
            ignore_done=False,
        ),
        collect=dict(
            n_sample=128,
            unroll_len=1,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=50, )),
    ),
)
cartpole_ppg_config = EasyDict(cartpole_ppg_config)
main_config = cartpole_ppg_config
cartpole_ppg_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppg'),
)
cartpole_ppg_create_config = EasyDict(cartpole_ppg_create_config)
create_config = cartpole_ppg_create_config

if __name__ == "__main__":
    # or you can enter `ding -m serial_onpolicy -c cartpole_ppg_config.py -s 0`
    from ding.entry import serial_pipeline_onpolicy
    serial_pipeline_onpolicy((main_config, create_config), seed=0)
