"""DDPG on Pendulum-v1: TD3's Pendulum settings (pendulum_td3) with its three additions off, one critic, no
target smoothing and an actor step per critic step."""
import copy
from typing import Any

from tidal.config.zoo import pendulum_td3

main_config: dict[str, Any] = copy.deepcopy(pendulum_td3.main_config)
main_config['exp_name'] = 'pendulum_ddpg'

create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='base'),
    policy=dict(type='ddpg'),
)
