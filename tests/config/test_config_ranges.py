"""Rules in config comments: the grammar, their checks in compile_config, cross-key and memory checks."""
from __future__ import annotations

import math

import pytest

from tidal.config import comments_for, compile_config, format_config, resolve_config_source
from tidal.config import limits
from tidal.config.declared import class_rules
from tidal.config.run_config import RunConfig
from tidal.config.rules import RuleSyntaxError, parse_rule, rule_of_comment
from tidal.base.defaults import FreeDict, class_defaults
from tidal.base.errors import ConfigError, EnvError
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY


def error_of(name: str, *overrides: str) -> str:
    with pytest.raises(ConfigError) as err:
        compile_config(*resolve_config_source(name), overrides=list(overrides))
    return str(err.value)


# ----- the grammar ---------------------------------------------------------------------------------
@pytest.mark.parametrize('text, good, bad', [
    ('int', [0, -3, 10**12], [True, 1.0, '1', None]),
    ('int > 0', [1], [0, -1]),
    ('int >= 0', [0], [-1]),
    ('float in [0, 1]', [0, 1, 0.5], [-0.1, 1.5]),
    ('float in (0, 1]', [1, 1e-9], [0, 1.01]),
    ('float > 0 or None', [None, 2], [0, 'x']),
    ('int in [1, 4096]', [1, 4096], [0, 4097]),
    ('int in [0, 2**63 - 1]', [2**63 - 1], [2**63, -1]),
    ('int in [1, 100_000]', [100_000], [100_001]),
    ('list[int > 0]', [[], [1, 2], (3,)], [[0], 256, [1, 'a']]),
    ('list[float] of length 2 or None', [None, [0, 1.5]], [[1], [1, 2, 3]]),
    ("str in {'cpu', 'cuda', 'auto'}", ['cpu', 'auto'], ['gpu', 1]),
    ("str matching 'cuda:[0-9]+'", ['cuda:0'], ['cuda:', 'cuda:x']),
    ('float in [0, inf]', [math.inf, 0], [-1, math.nan, -math.inf]),
    ('bool', [True, False], [1, 'yes', None]),
])
def test_rules_accept_and_refuse_values(text, good, bad):
    rule = parse_rule(text)
    for value in good:
        rule.check(value, 'key')
    for value in bad:
        with pytest.raises(ConfigError):
            rule.check(value, 'key')


@pytest.mark.parametrize('value', [math.nan, math.inf, -math.inf])
def test_floats_must_be_finite_unless_the_rule_says_so(value):
    with pytest.raises(ConfigError, match="config key 'lr' must be finite, got"):
        parse_rule('float').check(value, 'lr')


def test_a_comment_opens_with_its_rule_and_a_bare_type_checks_the_type_only():
    assert rule_of_comment('(float in (0, 1]) Polyak factor (of the targets).').text == 'float in (0, 1]'
    assert rule_of_comment('(int) Samples per update.').text == 'int'
    assert rule_of_comment('Keyword arguments of the model.') is None


@pytest.mark.parametrize('comment, problem', [
    ('(int >> 0) x', "expected a number at '> 0) x'"),
    ('(integer > 0) x', "expected a type (None, bool, int, float, str, list) at 'integer > 0) x'"),
    ('(float in [1, 0]) x', "an interval must have low <= high at ']) x'"),
    ('(int > 0 x', "expected 'or' or ')' at 'x'"),
    ('(int => 0) x', "expected ')' at '=> 0) x'"),
])
def test_malformed_rules_name_the_problem(comment, problem):
    with pytest.raises(RuleSyntaxError) as err:
        rule_of_comment(comment)
    assert str(err.value) == problem


class TypoInRule:
    config = dict(
        learn=dict(
            # (int >> 0) Samples per update.
            batch_size=64,
        ),
    )


class DefaultBreaksRule:
    config = dict(
        # (float) Stop once the return reaches this.
        stop_value=None,
    )


def test_a_malformed_rule_fails_loudly_naming_the_class_and_key():
    with pytest.raises(RuleSyntaxError) as err:
        class_rules(TypoInRule)
    assert str(err.value) == ("malformed config rule of key 'learn.batch_size' in "
                              f"{__name__}.TypoInRule ('# (int >> 0) Samples per update.'): "
                              "expected a number at '> 0) Samples per update.'")


def test_a_default_that_breaks_its_own_rule_fails_loudly():
    with pytest.raises(RuleSyntaxError) as err:
        class_rules(DefaultBreaksRule)
    assert str(err.value) == (f"the default of 'stop_value' in {__name__}.DefaultBreaksRule breaks its own rule "
                              "'(float)': config key 'stop_value' must be float, got None; None is not allowed for "
                              "this key (a key whose rule says 'or None' takes null in YAML and --set, None in Python)")


# ----- every built-in default declares a rule --------------------------------------------------------
def _leaf_paths(tree: dict, prefix: str = '') -> list[str]:
    paths = []
    for key, value in tree.items():
        path = f'{prefix}.{key}' if prefix else key
        if isinstance(value, dict) and not isinstance(value, FreeDict):
            paths += _leaf_paths(value, path)
        elif isinstance(value, FreeDict):
            paths += [f'{path}.{name}' for name in value]  # its declared keys only
        else:
            paths.append(path)
    return paths


def _builtin_classes() -> list[type]:
    import tidal.envs  # noqa: F401  registers the built-ins
    import tidal.policies  # noqa: F401
    return ([RunConfig] + [POLICY_REGISTRY.get(name) for name in
                           ('sac', 'sac_v', 'discrete_sac', 'sqil_sac', 'taac', 'taac_l', 'taac_q')]
            + [ENV_REGISTRY.get('gym'), ENV_MANAGER_REGISTRY.get('base'), ENV_MANAGER_REGISTRY.get('subprocess')])


@pytest.mark.parametrize('cls', _builtin_classes(), ids=lambda cls: cls.__name__)
def test_every_builtin_default_declares_a_rule(cls):
    rules = class_rules(cls)
    assert [path for path in _leaf_paths(class_defaults(cls)) if path not in rules] == []


def test_config_show_prints_each_keys_rule():
    cfg = compile_config(*resolve_config_source('pendulum_sac'))
    text = format_config(cfg, comments_for(cfg))
    assert '    # (float in [0, 1]) Discount factor gamma.\n    discount_factor: 0.99\n' in text
    assert "    # (list[int > 0]) Argument of model 'continuous_qac'.\n    actor_hidden_sizes:" in text
    assert '  # (int in [1, 4096]) Envs stepped together by the collector.\n' in text


# ----- compile_config enforces the rules -------------------------------------------------------------
@pytest.mark.parametrize('override, message', [
    ('policy.learn.discount_factor=1.5', "config key 'policy.learn.discount_factor' must be in [0, 1], got 1.5"),
    ('policy.learn.target_theta=2', "config key 'policy.learn.target_theta' must be in (0, 1], got 2.0"),
    ('policy.learn.target_theta=0', "config key 'policy.learn.target_theta' must be in (0, 1], got 0.0"),
    ('policy.learn.update_per_collect=0',
     "config key 'policy.learn.update_per_collect' must be in [1, 100_000], got 0"),
    ('policy.learn.update_per_collect=1000000000000',
     "config key 'policy.learn.update_per_collect' must be in [1, 100_000], got 1000000000000"),
    ('policy.eval.evaluator.eval_freq=0', "config key 'policy.eval.evaluator.eval_freq' must be > 0, got 0"),
    ('policy.learn.learner.log_freq=0', "config key 'policy.learn.learner.log_freq' must be > 0, got 0"),
    ('policy.collect.n_sample=-1', "config key 'policy.collect.n_sample' must be > 0, got -1"),
    ('policy.collect.unroll_len=0', "config key 'policy.collect.unroll_len' must be > 0, got 0"),
    ('policy.random_collect_size=-1', "config key 'policy.random_collect_size' must be >= 0, got -1"),
    ('policy.model.actor_hidden_sizes=[0]', "config key 'policy.model.actor_hidden_sizes[0]' must be > 0, got 0"),
    ('policy.model.actor_hidden_sizes=256',
     "config key 'policy.model.actor_hidden_sizes' must be list[int > 0], got int (256)"),
    ('policy.model.twin_critic=abc', "config key 'policy.model.twin_critic' must be bool, got str ('abc')"),
    ('env.stop_value=abc', "config key 'env.stop_value' must be float in [-inf, inf] or None, got str ('abc')"),
    ('env.n_evaluator_episode=0', "config key 'env.n_evaluator_episode' must be in [1, 10_000], got 0"),
    ('env.n_evaluator_episode=100000', "config key 'env.n_evaluator_episode' must be in [1, 10_000], got 100000"),
    ('env.collector_env_num=100000', "config key 'env.collector_env_num' must be in [1, 4096], got 100000"),
    ('env.evaluator_env_num=100000', "config key 'env.evaluator_env_num' must be in [1, 4096], got 100000"),
])
def test_values_out_of_range_are_refused_with_key_rule_and_value(override, message):
    assert error_of('pendulum_sac', override) == message


@pytest.mark.parametrize('key', ['learning_rate_q', 'target_theta', 'discount_factor', 'alpha'])
@pytest.mark.parametrize('value', ['.nan', '.inf', '-.inf'])
def test_nan_and_inf_are_refused(key, value):
    message = error_of('pendulum_sac', f'policy.learn.{key}={value}')
    assert message.startswith(f"config key 'policy.learn.{key}' must be finite, got ")


def test_a_fixed_alpha_of_zero_is_accepted_and_a_tuned_one_refused():
    cfg = compile_config(*resolve_config_source('pendulum_sac'),
                         overrides=['policy.learn.alpha=0', 'policy.learn.auto_alpha=false'])
    assert cfg.policy.learn.alpha == 0
    tuned = compile_config(*resolve_config_source('pendulum_sac'), overrides=['policy.learn.alpha=0'])
    with pytest.raises(ConfigError) as err:  # the temperature, not shared config code, knows why
        POLICY_REGISTRY.build('sac', tuned.policy)
    assert str(err.value) == 'policy.learn.alpha must be > 0 when auto_alpha tunes it as log(alpha), got 0.0'


def test_taac_sequences_need_two_steps_and_its_switch_clip_two_bounds():
    assert error_of('pendulum_taac', 'policy.collect.unroll_len=1') == (
        "config key 'policy.collect.unroll_len' must be >= 2, got 1")
    assert error_of('pendulum_taac', 'policy.learn.switch_advantage_clip=[1]') == (
        "config key 'policy.learn.switch_advantage_clip' must be a list of length 2 or None, got [1]")


def test_collecting_more_than_the_buffer_holds_is_refused():
    assert error_of('pendulum_sac', 'policy.random_collect_size=1000000000000') == (
        'policy.random_collect_size=1000000000000 is larger than policy.other.replay_buffer.replay_buffer_size'
        '=100000: warm-up transitions beyond what the buffer holds are overwritten before the first update')
    assert error_of('pendulum_sac', 'policy.collect.n_sample=1000000000000') == (
        'policy.collect.n_sample=1000000000000 is larger than policy.other.replay_buffer.replay_buffer_size'
        '=100000: a collector call would overwrite its own transitions before any update sees them')


# ----- memory --------------------------------------------------------------------------------------
def test_a_pendulum_transition_takes_36_bytes():
    # obs 3 + next_obs 3 + action 1 + reward 1 + flags 1, float32
    assert limits.transition_bytes(3, 1, discrete=False) == 36
    assert limits.transition_bytes([4], 2, discrete=True) == 4 * (8 + 1 + 2)


def test_sizes_that_cannot_fit_are_refused_before_allocation(monkeypatch):
    monkeypatch.setattr(limits, 'available_memory', lambda: 21_300_000_000)
    assert error_of('pendulum_sac', 'policy.other.replay_buffer.replay_buffer_size=1000000000000') == (
        'policy.other.replay_buffer.replay_buffer_size=1000000000000 needs about 36.0 TB for Pendulum-v1 '
        'transitions (36 bytes each), more than the 21.3 GB of memory available')
    assert error_of('pendulum_taac', 'policy.learn.batch_size=1000000000') == (
        'policy.learn.batch_size=1000000000 (sequences of 4 steps) needs about 144.0 GB for Pendulum-v1 '
        'transitions (36 bytes each), more than the 21.3 GB of memory available')


def test_ppg_aux_buffer_of_interval_rollouts_that_cannot_fit_is_refused(monkeypatch):
    monkeypatch.setattr(limits, 'available_memory', lambda: 21_300_000_000)
    # interval x n_sample = 1e9 x 512 transitions of 4 x (4 + 4 + 1 + 1 + 1) = 44 bytes
    assert error_of('cartpole_ppg', 'policy.aux.interval=1000000000') == (
        'policy.aux.interval=1000000000 needs about 22.5 TB for CartPole-v1 transitions (44 bytes each), more '
        'than the 21.3 GB of memory available')


def test_memory_check_is_skipped_where_memory_cannot_be_read(monkeypatch):
    monkeypatch.setattr(limits, 'available_memory', lambda: None)
    cfg = compile_config(*resolve_config_source('pendulum_sac'),
                         overrides=['policy.other.replay_buffer.replay_buffer_size=1000000000000'])
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 10**12


def test_available_memory_is_a_positive_byte_count_here():
    assert limits.available_memory() > 0
    assert limits.format_bytes(21_300_000_000) == '21.3 GB' and limits.format_bytes(512) == '512 bytes'


# ----- the env built at compile time ---------------------------------------------------------------
def test_env_arguments_that_fail_only_in_step_are_an_env_error():
    with pytest.raises(EnvError) as err:
        compile_config(*resolve_config_source('pendulum_sac'), overrides=['env.env_kwargs.g=abc'])
    assert str(err.value) == ("env 'Pendulum-v1' fails at its first step with env.env_kwargs {'g': 'abc'}: "
                              "TypeError: unsupported operand type(s) for /: 'str' and 'float'")


@pytest.mark.parametrize('override, message', [
    ('policy.model.obs_shape=4', "config key 'policy.model.obs_shape' is 4 but env 'Pendulum-v1' has 3; "
                                 "leave the key out to take the env's"),
    ('policy.model.action_shape=[2]', "config key 'policy.model.action_shape' is [2] but env 'Pendulum-v1' has 1; "
                                      "leave the key out to take the env's"),
])
def test_shapes_the_user_sets_must_match_the_env(override, message):
    assert error_of('pendulum_sac', override) == message


# ----- TAAC declares only its own keys -------------------------------------------------------------
#: pendulum_taac's compiled policy sections before SAC's and TAAC's shared keys moved to one class.
TAAC_BEFORE = {
    'random_collect_size': 1000,
    'model': {'action_shape': 1, 'actor_hidden_sizes': [256, 256], 'critic_hidden_sizes': [256, 256],
              'obs_shape': 3, 'twin_critic': True},
    'learn': {'alpha': 0.2, 'auto_alpha': True, 'batch_size': 64, 'compile': 'none', 'discount_factor': 0.99, 'ignore_done': False,
              'init_w': 0.003, 'learner': {'log_freq': 100, 'save_ckpt_freq': 1000}, 'learning_rate_alpha': 0.0003,
              'learning_rate_policy': 0.0003, 'learning_rate_q': 0.0003, 'switch_advantage_clip': None,
              'switch_alpha': 1.0, 'switch_target_entropy': None, 'target_entropy': None, 'target_theta': 0.005,
              'update_per_collect': 1},
    'collect': {'n_sample': 1, 'unroll_len': 4},
    'eval': {'epsilon_greedy': 0.1, 'evaluator': {'eval_freq': 1000}},
    'other': {'replay_buffer': {'alpha': 0.6, 'anneal_step': 0, 'beta': 0.4, 'replay_buffer_size': 100000}},
    'trajectory': {'max_repeat_steps': 0, 'randomize_first_state_tau': False},
}


def _contains(tree: dict, expected: dict) -> bool:
    return all(_contains(tree[key], value) if isinstance(value, dict) else tree[key] == value
               for key, value in expected.items())


def test_taac_compiles_to_the_same_config_as_before():
    cfg = compile_config(*resolve_config_source('pendulum_taac'))
    assert _contains(cfg.policy, TAAC_BEFORE)
    assert set(cfg.policy.learn) - {'learner'} == set(TAAC_BEFORE['learn']) - {'learner'}


def test_taac_and_sac_share_one_declaration_of_their_common_keys():
    from tidal.policies.max_entropy import MaxEntropyActorCritic
    taac, sac = POLICY_REGISTRY.get('taac'), POLICY_REGISTRY.get('sac')
    shared = set(MaxEntropyActorCritic.config['learn'])
    assert not shared & set(taac.config['learn']) and not shared & set(sac.config['learn'])
    assert class_defaults(taac)['learn']['batch_size'] == 64
