"""SAC on MountainCarContinuous-v0 with the settings of `pendulum_sac`: the baseline of `mountaincar_taac`."""
import copy

from tidal.config.zoo import pendulum_sac

main_config = copy.deepcopy(pendulum_sac.main_config)
main_config['exp_name'] = 'mountaincar_sac'
main_config['env'].update(env_id='MountainCarContinuous-v0', stop_value=90)

create_config = copy.deepcopy(pendulum_sac.create_config)
