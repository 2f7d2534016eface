"""The Atari zoo configs build the Nature CNN (Mnih et al. 2015) from ConvEncoder's keys, in PPO's, PPG's and
discrete SAC's models alike."""
from __future__ import annotations

import pytest
import torch

from tidal.models.encoders import ConvEncoder

# conv 8x8/4 to 32, 4x4/2 to 64, 3x3/1 to 64 (weights + biases), then 7 * 7 * 64 = 3136 features to 512
NATURE_CNN_PARAMETERS = (4 * 32 * 8 * 8 + 32) + (32 * 64 * 4 * 4 + 64) + (64 * 64 * 3 * 3 + 64) + (3136 * 512 + 512)


def parameters(module: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


def test_nature_cnn_keys_give_the_nature_cnn():
    encoder = ConvEncoder([84, 84, 4], [32, 64, 64], [8, 4, 3], [4, 2, 1], [512], 'relu', pixel_scale=1 / 255)
    assert parameters(encoder) == NATURE_CNN_PARAMETERS == 1_684_128
    frames = torch.full((2, 84, 84, 4), 255, dtype=torch.uint8)
    assert encoder(frames).shape == (2, 512)


@pytest.mark.parametrize('zoo_name, encoders', [('pong_ppo', 1), ('pong_ppg', 2), ('pong_discrete_sac', 3)])
def test_atari_zoo_models_are_built_of_nature_cnns(zoo_name, encoders):
    """PPO shares one encoder; PPG's policy and value networks have one each, discrete SAC's actor and two
    critics too."""
    pytest.importorskip('ale_py')
    pytest.importorskip('cv2')
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_policy
    policy = build_policy(load_config(zoo_name, 0), enable_field=('eval',))
    found = [module for module in policy.model.modules() if isinstance(module, ConvEncoder)]
    assert len(found) == encoders
    assert all(parameters(encoder) == NATURE_CNN_PARAMETERS and encoder.pixel_scale == 1 / 255 for encoder in found)
