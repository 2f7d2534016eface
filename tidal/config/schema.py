"""Markers used inside default config dicts."""
from __future__ import annotations

from easydict import EasyDict


class FreeDict(EasyDict):
    """A config section whose keys are not declared in the defaults.

    The user may add any key here; the section is checked elsewhere (for `policy.model`, against
    the model constructor's signature) or forwarded as it is (`env.env_kwargs` to `gymnasium.make`).
    An EasyDict, so it survives inside EasyDict configs and takes attribute writes.
    """
