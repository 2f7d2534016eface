"""The run's policy as the entry hands it on (to the user, to `tidal export`): a `Policy`.

The workers build policies too (a Ray worker its own, a CPU copy for acting) and know them only through the
ground floor's Protocol (`tidal.base.policy.PolicyLike`). Every class the policy registry holds is a `Policy`,
which the entry, above both `policies` and `worker`, may say.
"""
from __future__ import annotations

from typing import Iterable, cast

from easydict import EasyDict

from tidal.policies.base import MODES, Policy
from tidal.worker import builders


def build_policy(cfg: EasyDict, enable_field: Iterable[str] = MODES) -> Policy:
    """`tidal.worker.builders.build_policy`, typed as the registered class it builds."""
    return cast(Policy, builders.build_policy(cfg, enable_field))
