"""Pure functions of RL maths; they know no algorithm and no training loop."""
from tidal.rl_utils.distributions import masked_logits, tanh_gaussian_log_prob, tanh_gaussian_sample
from tidal.rl_utils.sample import StepType, step_type
from tidal.rl_utils.td import (compare_through_return, gather_action, q_1step_td_error, td_target,
                               v_1step_td_error)

__all__ = ['StepType', 'compare_through_return', 'gather_action', 'masked_logits', 'q_1step_td_error', 'tanh_gaussian_log_prob',
           'step_type', 'tanh_gaussian_sample', 'td_target', 'v_1step_td_error']
