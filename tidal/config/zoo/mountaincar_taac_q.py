"""TaacQ on the same settings as `mountaincar_taac`: only the trajectory family changes."""
import copy

from tidal.config.zoo import mountaincar_taac

main_config = copy.deepcopy(mountaincar_taac.main_config)
main_config['exp_name'] = 'mountaincar_taac_q'

create_config = copy.deepcopy(mountaincar_taac.create_config)
create_config['policy']['type'] = 'taac_q'
