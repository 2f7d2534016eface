import pytest

from tidal.base.errors import TidalError, UnknownNameError
from tidal.registry import POLICY_REGISTRY, Registry, import_names


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


def test_unknown_name_suggests_the_closest():
    with pytest.raises(UnknownNameError) as err:
        POLICY_REGISTRY.get('sack')
    assert str(err.value).startswith("unknown policy 'sack'; did you mean 'sac'")
    assert isinstance(err.value, KeyError)


def test_import_names_registers_a_users_module(tmp_path, monkeypatch):
    (tmp_path / 'my_widgets.py').write_text(
        'from tidal.registry import POLICY_REGISTRY\n'
        "@POLICY_REGISTRY.register('my_test_policy', force=True)\n"
        'class MyPolicy:\n    pass\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    import_names(['my_widgets'])
    assert POLICY_REGISTRY.get('my_test_policy').__name__ == 'MyPolicy'


def test_import_names_of_a_missing_module_is_a_clear_error():
    with pytest.raises(TidalError, match="cannot import module 'no_such_module_xyz'"):
        import_names(['no_such_module_xyz'])
