# reinforce.py
"""REINFORCE with a learned baseline (Williams 1992), trained on-policy by tidal's 'rollout' feed."""
import torch

from tidal import POLICY_REGISTRY, Policy
from tidal.base.stages import LearnPlan, LossStage


@POLICY_REGISTRY.register('reinforce')
class ReinforcePolicy(Policy):
    config = dict(
        type='reinforce',
        learn=dict(
            # (int in [1, 100]) Passes over each rollout; REINFORCE learns from each sample once.
            epoch_per_collect=1,
            # (int > 0) Rows per gradient step; as many as n_sample makes one step per rollout.
            batch_size=256,
            # (float > 0) Adam learning rate.
            learning_rate=3e-3,
            # (float >= 0) Weight of the baseline's squared error in the loss.
            value_weight=0.5,
        ),
        collect=dict(
            # (int > 0) Env steps per rollout, summed over the collector envs.
            n_sample=256,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
        ),
    )
    pipeline = 'rollout'  # on-policy: learn from each fresh rollout, then drop it
    action_space = 'discrete'

    @classmethod
    def default_model(cls, cfg):
        # PPO's registered network: a categorical policy head and a value head (our baseline)
        return 'actor_critic', ['tidal.models.actor_critic']

    # ----- learn mode: one gradient step per batch --------------------------------------------
    def _init_learn(self):
        # a part declared once: checkpoints, DDP and seed groups find the optimizer here
        self._optimizer = self.parts.optimizer(
            'optimizer', torch.optim.Adam(self._model.parameters(), lr=self._cfg.learn.learning_rate))

    def _learn_plan(self, batch):
        # the update as a loss and its optimizer: the learn mode runs it (no _forward_learn needed), and a
        # seed group (--seeds) stacks it over its seeds
        return LearnPlan([LossStage(self._optimizer, self._loss, grad_clip_norm=None)])

    def _loss(self, batch):
        dist, value = self._model(batch['obs'])
        advantage = batch['return'] - value.detach()
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        policy_loss = -(dist.log_prob(batch['action']) * advantage).mean()
        value_loss = (batch['return'] - value).pow(2).mean()
        loss = policy_loss + self._cfg.learn.value_weight * value_loss
        return loss, {'policy_loss': policy_loss.detach(), 'value_loss': value_loss.detach(),
                      'entropy': dist.entropy().mean().detach()}

    def _monitor_vars_learn(self):
        return ['policy_loss', 'value_loss', 'entropy']

    # ----- collect mode: act, then turn a rollout into training rows --------------------------
    @torch.no_grad()
    def _forward_collect(self, obs):
        return {'action': self._model.act(obs)}

    @torch.no_grad()
    def _get_train_sample(self, transitions, layout):
        """Each row's discounted return. Rows are step-major: env i's k-th step is row k * num_envs + i.
        Where an episode is cut off (time limit, end of the rollout) the baseline's value stands in for
        the rest of it."""
        steps, envs = layout.steps, layout.num_envs
        reward = transitions['reward'].reshape(steps, envs)
        terminated = transitions['terminated'].reshape(steps, envs)
        truncated = transitions['truncated'].reshape(steps, envs)
        next_value = self._model.value(transitions['next_obs']).reshape(steps, envs)
        returns = torch.empty_like(reward)
        later = next_value[-1]  # after the rollout's last step
        for t in reversed(range(steps)):
            later = torch.where(truncated[t], next_value[t], later)
            later = torch.where(terminated[t], torch.zeros_like(later), later)
            later = returns[t] = reward[t] + self._cfg.collect.discount_factor * later
        transitions['return'] = returns.reshape(-1)
        return transitions

    # ----- eval mode: the most likely action, or a sample with eval.deterministic=False ---------
    @torch.no_grad()
    def _forward_eval(self, obs):
        return {'action': self._model.act(obs, deterministic=self._cfg.eval.deterministic,
                                          generator=self._eval_generator)}
