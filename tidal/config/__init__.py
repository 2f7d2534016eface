"""Configs: reading files and zoo names, merging over the classes' defaults with checks, saving.

A run's config is one tree: `exp_name`, `seed`, `import_names`, and the `env`, `env_manager` and
`policy` sections, each starting from the `config` defaults of the class its `type` names.
"""
from tidal.config.comments import config_comments
from tidal.config.compiler import compile_config, default_exp_name
from tidal.config.ding import ding_stand_ins
from tidal.config.formatter import comments_for, format_config, format_run_config
from tidal.config.layered import ConfigLayers
from tidal.config.loader import read_config, resolve_config_source, zoo_names
from tidal.config.declared import install_registry_checks
from tidal.config.saver import save_config, split_config
from tidal.base.defaults import FreeDict
from tidal.registry import set_import_scope

# before any env registers when config is imported first; over those already registered otherwise
install_registry_checks()
# users' modules written for DI-engine import tidal's classes by DI-engine's names
set_import_scope(ding_stand_ins)

__all__ = ['ConfigLayers', 'FreeDict', 'comments_for', 'compile_config', 'config_comments', 'default_exp_name',
           'format_config', 'format_run_config', 'read_config', 'resolve_config_source', 'save_config',
           'split_config', 'zoo_names']
