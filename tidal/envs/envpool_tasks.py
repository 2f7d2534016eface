"""Which EnvPool task, with which settings, stands for a tidal env config.

EnvPool names most gymnasium tasks as gymnasium does (`CartPole-v1`, `Hopper-v5`), but its Atari tasks
(`Pong-v5`) carry their preprocessing in the task itself; this module maps both kinds of config onto
`envpool.make` arguments, and refuses what EnvPool cannot do with the config's own key named.
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Mapping

from tidal.base.errors import EnvError
from tidal.envs.atari_env import V4_ID, ale_id_and_kwargs

# gymnasium's Atari ids: 'ALE/Pong-v5' (sticky actions) and, in the 'atari' env type's V4_ID form,
# 'PongNoFrameskip-v4' (none)
_ALE_V5 = re.compile(r'^ALE/(?P<game>\w+)-v5$')
_ALE_V5_STICKY_ACTION_PROBABILITY = 0.25  # ALE v5's default; the v4 ids imply 0 (ale_id_and_kwargs)
_ATARI_MAX_FRAMES = 108_000  # ALE v5's episode limit in emulator frames
_ALE_SETTINGS = ('repeat_action_probability', 'full_action_space')  # the env_kwargs EnvPool takes for ALE


def envpool_task(env_cfg: Mapping[str, Any], training: bool, all_ids: list[str]) -> tuple[str, dict[str, Any]]:
    """(EnvPool task id, keyword arguments for `envpool.make`) for the env section `env_cfg`; `training`
    turns on Atari's episodic life and reward clipping, which evaluation leaves off to score whole games."""
    env_type = env_cfg.get('type') or 'gym'
    env_id = str(env_cfg.get('env_id') or '')
    if not env_id:
        raise EnvError('env.env_id is not set')
    if env_type == 'atari':
        return _atari_task(env_cfg, env_id, training, all_ids)
    if env_type != 'gym':
        raise EnvError(f"env_manager.type 'envpool' runs env types 'gym' and 'atari', not '{env_type}' (env.type)")
    if _ALE_V5.match(env_id) or V4_ID.fullmatch(env_id):
        raise EnvError(f"Atari id '{env_id}' (env.env_id) runs under env_manager.type 'envpool' with env.type "
                       f"'atari' only: EnvPool's Atari tasks are preprocessed, the 'gym' env type's frames are not")
    if env_id not in all_ids:
        raise EnvError(_unknown_task(env_id, all_ids))
    return env_id, _gym_kwargs(env_cfg, env_id)


def _gym_kwargs(env_cfg: Mapping[str, Any], env_id: str) -> dict[str, Any]:
    """env.env_kwargs as EnvPool settings: its tasks take `max_episode_steps` and most of the env's own
    arguments (`ctrl_cost_weight`, `reset_noise_scale`) under gymnasium's names."""
    import envpool
    accepted = set(envpool.make_spec(env_id).config._fields)
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise EnvError(f"env.env_kwargs {unknown} have no EnvPool setting for '{env_id}' "
                       f"(env_manager.type 'envpool'); use env_manager.type 'base' for them")
    return kwargs


def _atari_task(env_cfg: Mapping[str, Any], env_id: str, training: bool,
                all_ids: list[str]) -> tuple[str, dict[str, Any]]:
    """The 'atari' env type's preprocessing in EnvPool's terms: no-op starts, frame skip with max-pooling,
    square grey frames, a frame stack, FIRE after a reset where the game needs it, and for training only
    lives as episodes and rewards clipped to their sign. EnvPool stacks channel-first; the manager turns
    its stacks channel-last, as the env type gives them."""
    match = _ALE_V5.match(env_id) or V4_ID.fullmatch(env_id)
    if match is None:
        raise EnvError(f"env.env_id '{env_id}' is not an Atari id EnvPool can map: use 'ALE/<Game>-v5' or "
                       f"'<Game>NoFrameskip-v4'")
    task_id = f"{match.group('game')}-v5"
    if task_id not in all_ids:
        raise EnvError(_unknown_task(env_id, all_ids, task_id))
    ale_kwargs = dict(env_cfg.get('env_kwargs') or {})
    unknown = sorted(set(ale_kwargs) - set(_ALE_SETTINGS))
    if unknown:
        raise EnvError(f"env.env_kwargs {unknown} have no EnvPool setting for '{env_id}' "
                       f"(env_manager.type 'envpool'); use env_manager.type 'base' for them")
    noop_max = int(env_cfg.get('noop_max', 30))
    if noop_max < 1:  # EnvPool 1.2 crashes on its first reset without no-ops
        raise EnvError(f"env.noop_max={noop_max} cannot run under env_manager.type 'envpool': EnvPool needs at "
                       f"least 1 (or use env_manager.type 'base')")
    ale_settings = {**ale_id_and_kwargs(env_id)[1], **ale_kwargs}  # what the id implies, then the user's
    screen_size = int(env_cfg.get('screen_size', 84))
    return task_id, dict(
        stack_num=int(env_cfg.get('frame_stack', 4)),
        frame_skip=int(env_cfg.get('frame_skip', 4)),
        noop_max=noop_max,
        img_height=screen_size,
        img_width=screen_size,
        gray_scale=True,
        use_fire_reset=True,  # EnvPool presses FIRE only in games whose actions include it, as the env type does
        episodic_life=training and bool(env_cfg.get('episode_life', True)),
        reward_clip=training and bool(env_cfg.get('clip_rewards', True)),
        repeat_action_probability=float(ale_settings.get('repeat_action_probability',
                                                         _ALE_V5_STICKY_ACTION_PROBABILITY)),
        full_action_space=bool(ale_settings.get('full_action_space', False)),
        max_episode_steps=_ATARI_MAX_FRAMES // int(env_cfg.get('frame_skip', 4)),
    )


def _unknown_task(env_id: str, all_ids: list[str], task_id: str | None = None) -> str:
    close = difflib.get_close_matches(task_id or env_id, all_ids, n=3, cutoff=0.5)
    hint = f"; close EnvPool ids: {', '.join(close)}" if close else ''
    mapped = f" (EnvPool's '{task_id}')" if task_id else ''
    return f"EnvPool has no task for env.env_id '{env_id}'{mapped}{hint}"
