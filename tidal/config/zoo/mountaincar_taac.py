"""TAAC on MountainCarContinuous-v0 with the settings of `pendulum_taac`. The task rewards persistent
actions: the car must keep pushing one way for many steps to climb, and every unit of force costs."""
import copy

from tidal.config.zoo import pendulum_taac

main_config = copy.deepcopy(pendulum_taac.main_config)
main_config['exp_name'] = 'mountaincar_taac'
main_config['env'].update(env_id='MountainCarContinuous-v0', stop_value=90)

create_config = copy.deepcopy(pendulum_taac.create_config)
