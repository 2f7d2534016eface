"""Pure functions of RL maths; they know no algorithm and no training loop."""
from tidal.rl_utils.distributions import gumbel_max_sample, masked_logits, tanh_gaussian_log_prob, tanh_gaussian_sample
from tidal.rl_utils.exploration import epsilon_at, noisy_action
from tidal.rl_utils.gae import gae
from tidal.rl_utils.offline import (advantage_weights, cql_penalty, discrete_cql_penalty, expectile_loss,
                                    gaussian_log_prob, rebrac_actor_loss, td3_bc_actor_loss)
from tidal.rl_utils.ppo import explained_variance, normalize_advantage, ppo_policy_loss, ppo_value_loss
from tidal.rl_utils.sample import StepType, step_type
from tidal.rl_utils.td import (compare_through_return, gather_action, nstep_return, per_sample, q_1step_td_error,
                               td_target, v_1step_td_error)
from tidal.rl_utils.vtrace import vtrace

__all__ = ['StepType', 'advantage_weights', 'compare_through_return', 'cql_penalty', 'discrete_cql_penalty', 'epsilon_at', 'expectile_loss', 'explained_variance', 'gae', 'gather_action',
           'gaussian_log_prob', 
           'gumbel_max_sample', 'masked_logits', 'noisy_action', 'normalize_advantage', 'nstep_return', 'per_sample',
           'ppo_policy_loss', 'ppo_value_loss', 'rebrac_actor_loss', 'q_1step_td_error', 'tanh_gaussian_log_prob', 'step_type',
           'tanh_gaussian_sample', 'td3_bc_actor_loss', 'td_target', 'v_1step_td_error', 'vtrace']
