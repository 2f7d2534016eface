"""Pure functions of RL maths; they know no algorithm and no training loop."""
from tidal.rl_utils.distributions import masked_logits, tanh_gaussian_log_prob, tanh_gaussian_sample
from tidal.rl_utils.sample import get_train_sample
from tidal.rl_utils.td import gather_action, q_1step_td_error, td_target, v_1step_td_error

__all__ = ['gather_action', 'get_train_sample', 'masked_logits', 'q_1step_td_error', 'tanh_gaussian_log_prob',
           'tanh_gaussian_sample', 'td_target', 'v_1step_td_error']
