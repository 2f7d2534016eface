"""TaacL on the same settings as `pendulum_taac`: only the trajectory family changes."""
import copy

from tidal.config.zoo import pendulum_taac

main_config = copy.deepcopy(pendulum_taac.main_config)
main_config['exp_name'] = 'pendulum_taac_l'

create_config = copy.deepcopy(pendulum_taac.create_config)
create_config['policy']['type'] = 'taac_l'
