"""DI-engine compatibility, a wing of its own: users' DI-engine configs and modules, as tidal runs them.

The config core knows DI-engine only through the names below. `compile_config` starts with `translate`
(DI-engine's env types, key names and options become tidal's) and ends with `remember` (the table of what was
done, which the run folder gets from `write_ding_mapping`); the loader imports a user's file inside
`ding_stand_ins` (DI-engine's import names, served by tidal's classes). `tables` holds the data,
`translation` applies it (`layout` the model's part), `report` records it, `stand_ins` serves the imports.
"""
from tidal.config.ding.report import DingMapping, mapping_of, remember, write_ding_mapping
from tidal.config.ding.stand_ins import DingImportError, ding_stand_ins
from tidal.config.ding.translation import translate

__all__ = ['DingImportError', 'DingMapping', 'ding_stand_ins', 'mapping_of', 'remember', 'translate',
           'write_ding_mapping']
