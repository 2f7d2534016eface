import pytest
import torch

from tidal.base.errors import ConfigError, TidalError
from tidal.config.defaults import merge_defaults
from tidal.config.schema import FreeDict
from tidal.base.device import resolve_device
from tidal.policies.base import Policy
from tidal.policies.sac import SACPolicy
from tidal.registry import POLICY_REGISTRY


class Reinforce(Policy):
    """A user's policy that forgot default_model."""

    config = dict(
        learn=dict(
            # (float > 0) Step size of Adam.
            learning_rate=1e-3,
        ),
    )


class UncommentedReinforce(Policy):
    """A user's policy with a default whose comment gives no rule."""

    config = dict(
        learn=dict(
            # Step size of Adam.
            learning_rate=1e-3,
        ),
        model=FreeDict(hidden_size=64),  # free-form: exempt
    )

    @classmethod
    def default_model(cls, cfg):
        return 'continuous_qac', ['tidal.models.qac']


def test_default_config_merges_the_class_chain():
    cfg = SACPolicy.default_config()
    assert cfg.type == 'sac'
    assert cfg.learn.batch_size == 256 and cfg.learn.learning_rate_q == 3e-4  # from SAC
    assert cfg.learn.learner.log_freq == 100  # from the base
    assert cfg.model.twin_critic is True
    assert Policy.config['type'] == ''  # the base's own dict is untouched


def test_merging_defaults_keeps_sibling_keys():
    assert merge_defaults({'a': {'b': 1, 'c': 2}}, {'a': {'c': 3}}) == {'a': {'b': 1, 'c': 3}}


def test_resolve_device():
    assert resolve_device('cpu') == torch.device('cpu')
    assert resolve_device('auto') == torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    with pytest.raises(ConfigError, match="policy.device must be 'cpu', 'cuda' or 'auto', got 'tpu'"):
        resolve_device('tpu')


@pytest.mark.skipif(torch.cuda.is_available(), reason='checks the message on a machine without CUDA')
def test_cuda_flag_means_cuda_and_fails_clearly_without_a_gpu():
    with pytest.raises(ConfigError, match="policy.device is 'cuda' but torch sees no CUDA device"):
        resolve_device('cpu', cuda=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_cuda_flag_puts_the_model_on_the_gpu():
    cfg = SACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=1)
    cfg.cuda = True
    policy = SACPolicy(cfg)
    assert next(policy.model.parameters()).device.type == 'cuda'


def test_a_policy_without_default_model_fails_at_registration():
    with pytest.raises(TidalError) as err:
        POLICY_REGISTRY.register('test_reinforce')(Reinforce)
    assert str(err.value) == (f"policy 'test_reinforce' ({__name__}.Reinforce) must define default_model(cls, cfg) "
                              f"naming its registered model")
    assert 'test_reinforce' not in POLICY_REGISTRY


def test_a_policy_default_without_a_rule_fails_at_registration():
    with pytest.raises(ConfigError) as err:
        POLICY_REGISTRY.register('test_reinforce')(UncommentedReinforce)
    assert str(err.value) == (f"policy 'test_reinforce' ({__name__}.UncommentedReinforce): config key "
                              f"'policy.learn.learning_rate' declares no rule in its comment, e.g. "
                              f"'# (float) What it sets.'")
    assert 'test_reinforce' not in POLICY_REGISTRY


def test_every_registered_policy_names_its_model_and_declares_its_rules():
    for name in POLICY_REGISTRY.names():
        POLICY_REGISTRY.check(name, POLICY_REGISTRY.get(name))
