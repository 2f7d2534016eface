"""Files written for DI-engine import `ding.policy` / `ding.utils` names: tidal serves its own classes under
them while it imports such a file (a config file, `import_names`, `--import`), and refuses other names in one line."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tidal.base.errors import TidalError
from tidal.config import compile_config, read_config
from tidal.entry.cli import main as tidal_main
from tidal.registry import POLICY_REGISTRY, import_names

DING_CONFIGS = Path(__file__).parent / 'ding_configs'

#: A policy module as a DI-engine user writes it.
POLICY_MODULE = '''
from ding.policy import SACPolicy
from ding.utils import MODEL_REGISTRY, POLICY_REGISTRY


@POLICY_REGISTRY.register('{name}')
class MySACPolicy(SACPolicy):
    """SAC under a name of the user's own."""
'''


def ding_config(tmp_path: Path, policy: str, import_names: tuple[str, ...] = ()) -> Path:
    """DI-engine's pendulum SAC config file with its policy type (and import names) switched."""
    text = (DING_CONFIGS / 'pendulum_sac_config.py').read_text()
    text = text.replace("type='sac',\n        import_names=['ding.policy.sac'],",
                        f"type='{policy}',\n        import_names={list(import_names)!r},")
    assert f"type='{policy}'" in text
    path = tmp_path / f'{policy}_config.py'
    path.write_text(text)
    return path


def test_policy_module_written_for_ding_is_imported_registers_and_trains(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'my_ding_sac.py').write_text(POLICY_MODULE.format(name='my_ding_sac'))
    config = ding_config(tmp_path, 'my_ding_sac')
    code = tidal_main(['train', str(config), '--import', './my_ding_sac.py', '--max-env-step', '300',
                       '--set', 'policy.random_collect_size=100', '--set', 'env.evaluator_env_num=1',
                       '--set', 'env.n_evaluator_episode=1', '--no-progress'])
    assert code == 0, capsys.readouterr().err
    assert POLICY_REGISTRY.get('my_ding_sac').__mro__[1] is POLICY_REGISTRY.get('sac')
    run_dir = tmp_path / 'pendulum_sac_seed0'
    assert json.loads((run_dir / 'summary.json').read_text())['env_step'] >= 300
    assert "(policy type 'my_ding_sac')" in (run_dir / 'ding_mapping.txt').read_text()
    assert not [name for name in sys.modules if name.split('.')[0] == 'ding']  # the stand-ins are gone


def test_policy_module_named_in_create_config_import_names_registers(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / 'my_ding_sac_by_name.py').write_text(POLICY_MODULE.format(name='my_ding_sac_by_name'))
    main, create = read_config(str(ding_config(tmp_path, 'my_ding_sac_by_name', ('my_ding_sac_by_name',))))
    assert compile_config(main, create, infer_shapes=False).policy.type == 'my_ding_sac_by_name'


def test_config_file_that_registers_its_own_policy_with_ding_names_loads(tmp_path):
    config = ding_config(tmp_path, 'my_ding_sac_in_config')
    config.write_text(POLICY_MODULE.format(name='my_ding_sac_in_config') + config.read_text())
    main, create = read_config(str(config))
    assert compile_config(main, create, infer_shapes=False).policy.type == 'my_ding_sac_in_config'


@pytest.mark.parametrize('line, message', [
    ('from ding.policy import DQNPolicy', "cannot import 'DQNPolicy' from DI-engine's ding.policy: tidal has only "
                                          "its SACPolicy, DiscreteSACPolicy, SQILSACPolicy, PPOPolicy, PPGPolicy "
                                          "(tidal's own, under DI-engine's names); import from tidal instead: "
                                          "tidal.policies (`tidal list policies`)"),
    ('from ding.utils import ENV_REGISTRY', "cannot import 'ENV_REGISTRY' from DI-engine's ding.utils: tidal has "
                                            "only its POLICY_REGISTRY, MODEL_REGISTRY (tidal's own, under DI-engine's "
                                            "names); import from tidal instead: from tidal import POLICY_REGISTRY, "
                                            "MODEL_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY"),
    ('import ding.envs', "cannot import DI-engine's module ding.envs: tidal has only ding.entry, ding.policy, "
                         "ding.utils (tidal's own, under DI-engine's names); import from tidal instead: tidal.envs, "
                         "registered in tidal.ENV_REGISTRY (`tidal list envs`)"),
])
def test_ding_name_tidal_does_not_serve_fails_in_one_line(tmp_path, monkeypatch, capsys, line, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'my_ding_module.py').write_text(f'{line}\n')
    code = tidal_main(['train', 'pendulum_sac', '--import', './my_ding_module.py'])
    assert (code, capsys.readouterr().err) == \
        (2, f"tidal: error: './my_ding_module.py' named in --import failed to import: {message}\n")
    assert list(tmp_path.iterdir()) == [tmp_path / 'my_ding_module.py']


def test_ding_import_error_is_an_import_error_for_fallbacks(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / 'my_ding_fallback.py').write_text('try:\n    from ding.model import VAC\n'
                                                  'except ImportError:\n    VAC = None\n')
    import_names(['my_ding_fallback'])
    assert sys.modules['my_ding_fallback'].VAC is None


def test_installed_ding_is_imported_not_the_stand_ins(tmp_path, monkeypatch):
    (tmp_path / 'ding').mkdir()
    (tmp_path / 'ding' / '__init__.py').write_text('')
    (tmp_path / 'ding' / 'utils.py').write_text("POLICY_REGISTRY = 'the installed one'\n")
    (tmp_path / 'my_ding_user.py').write_text('from ding.utils import POLICY_REGISTRY\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import_names(['my_ding_user'])
        assert sys.modules['my_ding_user'].POLICY_REGISTRY == 'the installed one'
    finally:
        for name in ('ding', 'ding.utils', 'my_ding_user'):
            sys.modules.pop(name, None)


def test_stand_in_entry_point_says_how_tidal_runs_the_file(tmp_path):
    config = tmp_path / 'run_config.py'
    config.write_text('from ding.entry import serial_pipeline\nserial_pipeline(None)\n')
    with pytest.raises(TidalError, match=r"ding.entry.serial_pipeline is DI-engine's; tidal runs this config with "
                                         r"`tidal train FILE` or `tidal -m serial -c FILE -s SEED`"):
        read_config(str(config))
