import pytest
import torch

from tidal.base.defaults import FreeDict, merge_defaults
from tidal.base.errors import ConfigError, TidalError
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


@pytest.mark.gpu
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


# ----- eval.deterministic --------------------------------------------------------------------------

def test_every_policy_evaluates_its_most_likely_action_by_default():
    assert Policy.default_config().eval.deterministic is True
    for name in POLICY_REGISTRY.names():
        assert POLICY_REGISTRY.get(name).default_config().eval.deterministic is True, name


def eval_policies(zoo_name, overrides):
    """(greedy, sampling) eval-only policies of a zoo config with equal weights."""
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_policy
    torch.manual_seed(0)
    greedy, sampling = (build_policy(load_config(zoo_name, 0, [*overrides, f'policy.eval.deterministic={each}']),
                                     enable_field=('eval',)) for each in (True, False))
    sampling.model.load_state_dict(greedy.model.state_dict())
    return greedy, sampling


def act(policy, obs, seed):
    """The eval actions of two steps from `obs` after seeding the eval mode; asserts the global generator is
    left alone."""
    global_state = torch.get_rng_state()
    mode = policy.eval_mode
    mode.seed(seed)
    mode.reset(None)
    actions = torch.stack([mode.forward(obs)['action'] for _ in range(2)])
    assert torch.equal(torch.get_rng_state(), global_state)
    return actions


SMALL_SAC = ['policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]']


@pytest.mark.parametrize('zoo_name, overrides, obs_size', [
    ('pendulum_sac', SMALL_SAC, 3),
    ('pendulum_sac_v', SMALL_SAC, 3),
    ('cartpole_discrete_sac', SMALL_SAC, 4),
    ('pendulum_taac', SMALL_SAC, 3),
    ('cartpole_ppg', ['policy.model.encoder_hidden_sizes=[16]'], 4),
    ('cartpole_muzero', ['policy.search.num_simulations=8'], 4),
    ('cartpole_muzero_repr_ppo', ['policy.model.encoder_hidden_sizes=[16]'], 4),
])
def test_a_sampling_eval_draws_from_its_own_seeded_generator(zoo_name, overrides, obs_size):
    greedy, sampling = eval_policies(zoo_name, overrides)
    obs = torch.randn(64, obs_size, generator=torch.Generator().manual_seed(1))
    first = act(sampling, obs, seed=5)
    assert torch.equal(act(sampling, obs, seed=5), first)  # the same seed, the same draws
    assert not torch.equal(act(sampling, obs, seed=6), first)
    assert not torch.equal(act(greedy, obs, seed=5), first)  # sampled, not the most likely action
