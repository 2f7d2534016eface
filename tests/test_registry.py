import pytest

from tidal.base.errors import ConfigError, TidalError, UnknownNameError
from tidal.base.defaults import FreeDict
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY, Registry, import_names


class UncommentedEnv:
    config = dict(
        # (str) Registered env name.
        type='',
        frame_skip=4,
        env_kwargs=FreeDict(),  # free-form: exempt
    )


class UncommentedManager:
    config = dict(
        # (str) Registered env manager name.
        type='',
        retry=dict(
            # (int >= 0) Retries of a failed step.
            times=2,
            wait_seconds=[0.5, 1.0],  # no rule
        ),
    )


def test_register_get_build_and_names():
    registry = Registry('widget')

    @registry.register('square')
    class Square:
        def __init__(self, side: int) -> None:
            self.side = side

    assert registry.get('square') is Square
    assert registry.build('square', 3).side == 3
    assert registry.names() == ['square']
    assert 'square' in registry


def test_taken_name_raises_unless_forced():
    registry = Registry('widget')
    registry.register('a')(int)
    with pytest.raises(TidalError, match="widget 'a' is already registered by builtins.int; pass force=True"):
        registry.register('a')(float)
    registry.register('a', force=True)(float)
    assert registry.get('a') is float


def test_check_refuses_at_registration_and_covers_what_registered_before_it():
    registry = Registry('widget')
    registry.register('int')(int)

    def no_floats(name: str, obj: object) -> None:
        if obj is float:
            raise TidalError(f"widget '{name}' may not be float")

    registry.check = no_floats  # int, registered before, passes
    with pytest.raises(TidalError, match="widget 'f' may not be float"):
        registry.register('f')(float)
    assert 'f' not in registry
    registry.check = None
    registry.register('f')(float)
    with pytest.raises(TidalError, match="widget 'f' may not be float"):
        registry.check = no_floats


def test_an_env_default_without_a_rule_fails_at_registration():
    with pytest.raises(ConfigError) as err:
        ENV_REGISTRY.register('test_uncommented_env')(UncommentedEnv)
    assert str(err.value) == (f"env 'test_uncommented_env' ({__name__}.UncommentedEnv): config key 'env.frame_skip' "
                              f"declares no rule in its comment, e.g. '# (int) What it sets.'")
    assert 'test_uncommented_env' not in ENV_REGISTRY


def test_an_env_manager_default_without_a_rule_fails_at_registration():
    with pytest.raises(ConfigError) as err:
        ENV_MANAGER_REGISTRY.register('test_uncommented_manager')(UncommentedManager)
    assert str(err.value) == (f"env manager 'test_uncommented_manager' ({__name__}.UncommentedManager): config key "
                              f"'env_manager.retry.wait_seconds' declares no rule in its comment, e.g. "
                              f"'# (list[float]) What it sets.'")
    assert 'test_uncommented_manager' not in ENV_MANAGER_REGISTRY


def test_every_registered_env_and_env_manager_declares_its_rules():
    for registry in (ENV_REGISTRY, ENV_MANAGER_REGISTRY):
        assert registry.check is not None
        for name in registry.names():
            registry.check(name, registry.get(name))


def test_unknown_name_suggests_the_closest():
    with pytest.raises(UnknownNameError) as err:
        POLICY_REGISTRY.get('sack')
    assert str(err.value).startswith("unknown policy 'sack'; did you mean 'sac'")
    assert isinstance(err.value, KeyError)


def test_import_names_registers_a_users_module(tmp_path, monkeypatch):
    (tmp_path / 'my_widgets.py').write_text(
        'from tidal.policies.base import Policy\n'
        'from tidal.registry import POLICY_REGISTRY\n'
        "@POLICY_REGISTRY.register('my_test_policy', force=True)\n"
        'class MyPolicy(Policy):\n'
        '    @classmethod\n'
        '    def default_model(cls, cfg):\n'
        "        return 'continuous_qac', ['tidal.models.qac']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import_names(['my_widgets'])
    assert POLICY_REGISTRY.get('my_test_policy').__name__ == 'MyPolicy'


def test_import_names_of_a_missing_module_is_a_clear_error():
    with pytest.raises(TidalError, match="cannot import module 'no_such_module_xyz'"):
        import_names(['no_such_module_xyz'])


def test_an_unknown_policy_says_how_to_register_ones_own_and_a_missing_module_names_import():
    with pytest.raises(UnknownNameError) as err:
        POLICY_REGISTRY.get('reinforce')
    assert str(err.value).endswith("; a policy of your own is registered by importing its module: "
                                   "--import MODULE_OR_FILE, or import_names in the config")
    assert 'of your own' not in ENV_MANAGER_REGISTRY._unknown_message('nope')  # users do not add managers
    with pytest.raises(TidalError) as err:
        import_names(['tidal_no_such_module.policy'])
    assert str(err.value) == ("cannot import module 'tidal_no_such_module.policy' named in import_names: No module "
                              "named 'tidal_no_such_module'; run tidal from the folder that holds it, or give its "
                              "file with --import PATH/tidal_no_such_module/policy.py")
