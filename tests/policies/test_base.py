import pytest
import torch

from tidal.base.errors import ConfigError
from tidal.config.defaults import merge_defaults
from tidal.base.device import resolve_device
from tidal.policies.base import Policy
from tidal.policies.sac import SACPolicy


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
