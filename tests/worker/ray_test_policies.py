"""A user's policy that breaks the training sample's contract, importable by Ray workers (tests/worker is on their
path)."""
from tidal.policies.ppo import PPOPolicy
from tidal.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register('test_ray_grid_advantage_ppo', force=True)
class RayGridAdvantagePPO(PPOPolicy):
    """Leaves its advantages as the [steps, envs] grid GAE computes them on."""

    def _get_train_sample(self, transitions, layout):
        sample = super()._get_train_sample(transitions, layout)
        sample['advantage'] = sample['advantage'].reshape(layout.steps, layout.num_envs)
        return sample
