"""FusedAdam: torch's fused Adam stepped without its per-call Python, bit-identical to it and sharing its state
layout; whatever its lean step does not cover runs Adam's own step. clip_grad_norm: torch's clipping, the same way."""
from __future__ import annotations

import math

import pytest
import torch

from tidal.policies import fused_adam
from tidal.policies.common import clip_grad_norm
from tidal.policies.fused_adam import FusedAdam


def _params(seed: int = 0) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(shape, generator=g)) for shape in ((3, 4), (4,), (2, 1, 4))]


def _gradients(params: list[torch.nn.Parameter], step: int) -> None:
    g = torch.Generator().manual_seed(100 + step)
    for param in params:
        param.grad = torch.randn(param.shape, generator=g)


def _run(cls: type[torch.optim.Adam], steps: int = 6, groups: bool = False, **kwargs) -> list[torch.Tensor]:
    params = _params()
    spec = ([{'params': params[:2]}, {'params': params[2:], 'lr': 3e-2}] if groups else params)
    optimizer = cls(spec, lr=1e-2, fused=True, **kwargs)
    for step in range(steps):
        optimizer.zero_grad()
        _gradients(params, step)
        optimizer.step()
    return [param.detach().clone() for param in params] + [
        state[name] for state in optimizer.state.values() for name in ('exp_avg', 'exp_avg_sq', 'step')]


@pytest.mark.parametrize('kwargs', [{}, {'groups': True}, {'weight_decay': 0.1},
                                    {'weight_decay': 0.1, 'decoupled_weight_decay': True},
                                    {'betas': (0.5, 0.999), 'eps': 1e-6}, {'maximize': True}])
def test_steps_are_bit_identical_to_torch_fused_adam(kwargs):
    ours, theirs = _run(FusedAdam, **kwargs), _run(torch.optim.Adam, **kwargs)
    assert len(ours) == len(theirs) == 12
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


def test_tensor_learning_rate_as_a_compiled_step_sets_it():
    params, reference = _params(), _params()
    ours = FusedAdam(params, lr=torch.tensor(1e-2))
    theirs = torch.optim.Adam(reference, lr=torch.tensor(1e-2), fused=True)
    for step in range(4):
        _gradients(params, step)
        _gradients(reference, step)
        ours.step()
        theirs.step()
    for a, b in zip(params, reference):
        assert torch.equal(a, b)


def test_after_the_first_step_adams_own_step_is_not_called(monkeypatch):
    params = _params()
    optimizer = FusedAdam(params, lr=1e-2)
    _gradients(params, 0)
    optimizer.step()  # creates the state, through Adam's own step
    calls = []
    original = fused_adam._ADAM_STEP
    monkeypatch.setattr(fused_adam, '_ADAM_STEP', lambda self, closure=None: calls.append(1) or original(self))
    for step in range(1, 4):
        _gradients(params, step)
        optimizer.step()
    assert calls == []
    assert float(optimizer.state[params[0]]['step']) == 4.0


def test_a_parameter_without_gradient_is_left_alone_as_adam_leaves_it():
    params, reference = _params(), _params()
    ours, theirs = FusedAdam(params, lr=1e-2), torch.optim.Adam(reference, lr=1e-2, fused=True)
    for step in range(3):
        for group in (params, reference):
            _gradients(group, step)
            if step == 2:
                group[1].grad = None
        ours.step()
        theirs.step()
    assert float(ours.state[params[1]]['step']) == 2.0
    for a, b in zip(params, reference):
        assert torch.equal(a, b)


@pytest.mark.parametrize('adam_built_before', [False, True])
def test_step_hooks_run_once(adam_built_before):
    params = _params()
    if adam_built_before:
        torch.optim.Adam(_params(), lr=1e-2)
    optimizer = FusedAdam(params, lr=1e-2)
    seen = []
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: seen.append('pre'))
    optimizer.register_step_post_hook(lambda opt, args, kwargs: seen.append('post'))
    for step in range(2):
        _gradients(params, step)
        optimizer.step()
    assert seen == ['pre', 'post', 'pre', 'post']


def test_state_dict_is_adams_both_ways():
    params = _params()
    ours = FusedAdam(params, lr=1e-2)
    for step in range(3):
        _gradients(params, step)
        ours.step()
    theirs = torch.optim.Adam(_params(), lr=1e-2, fused=True)
    theirs.load_state_dict(ours.state_dict())
    back = FusedAdam(_params(), lr=1e-2)
    back.load_state_dict(theirs.state_dict())
    for state in (theirs.state_dict(), back.state_dict()):
        assert state['param_groups'] == ours.state_dict()['param_groups']
        for index, entry in ours.state_dict()['state'].items():
            assert all(torch.equal(entry[name], state['state'][index][name]) for name in entry)


def test_zero_grad_sets_gradients_to_none_or_zero():
    params = _params()
    optimizer = FusedAdam(params, lr=1e-2)
    _gradients(params, 0)
    optimizer.zero_grad(set_to_none=False)
    assert all(torch.equal(param.grad, torch.zeros_like(param)) for param in params)
    optimizer.zero_grad()
    assert all(param.grad is None for param in params)


@pytest.mark.parametrize('max_norm', [None, 0.5, 1e6])
def test_clip_grad_norm_is_bit_identical_to_torchs(max_norm):
    ours, theirs = _params(), _params()
    for group in (ours, theirs):
        _gradients(group, 0)
    norm = clip_grad_norm(ours, max_norm)
    expected = torch.nn.utils.clip_grad_norm_(theirs, math.inf if max_norm is None else max_norm)
    assert torch.equal(norm, expected)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)
    if max_norm == 0.5:
        assert float(torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in ours]))) == pytest.approx(0.5)


def test_clip_grad_norm_of_mixed_dtypes_takes_torchs_path():
    params = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(4, dtype=torch.float64))]
    for param in params:
        param.grad = torch.full_like(param, 2.0)
    norm = clip_grad_norm(params, 1.0)
    assert float(norm) == pytest.approx(math.sqrt(7 * 4.0))
    assert float(params[1].grad[0]) == pytest.approx(2.0 / math.sqrt(28.0), rel=1e-5)
