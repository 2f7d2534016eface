"""What tidal did with a DI-engine config's keys: one line on the terminal, the whole table in the run folder.

A dizoo file holds a dozen keys that tidal renames, converts or ignores; a warning line for each buried the
run's own output. `translation.translate` records them in a `DingMapping`; `compile_config` keeps it beside
the config it returns (`remember`), and the run folder gets it as `ding_mapping.txt` (`write_ding_mapping`)
with one summary line on stderr.
"""
from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

FILE_NAME = 'ding_mapping.txt'


class _LeftOut:
    """The value of a key the config leaves out, where tidal fills in DI-engine's default."""

    def __repr__(self) -> str:
        return '(left out)'


LEFT_OUT = _LeftOut()


def became(updates: dict) -> str:
    """A note's "what was done" for keys set: "-> 'policy.device' = 'auto', ..."."""
    return '-> ' + ', '.join(f"'{path}' = {new!r}" for path, new in updates.items())


@dataclass(frozen=True)
class DingNote:
    """One DI-engine key (or create_config entry) and what tidal did with it, for the policy in use."""

    key: str
    value: str    # the key's value as the config wrote it (repr)
    done: str     # "-> 'policy.learn.grad_clip_norm' = 0.5", 'ignored', 'checked, then dropped'
    why: str
    ignored: bool


@dataclass
class DingMapping:
    """Every note of one config's translation, in the order it was made."""

    policy_type: str = ''
    notes: list[DingNote] = field(default_factory=list)

    def add(self, key: str, value: Any, done: str, why: str, ignored: bool = False) -> None:
        self.notes.append(DingNote(key, repr(value), done, why, ignored))

    def summary(self, path: Path) -> str:
        """'7 DI-engine keys converted, 3 ignored: see RUN/ding_mapping.txt'."""
        ignored = sum(note.ignored for note in self.notes)
        converted = len(self.notes) - ignored
        first, what = (converted, 'converted') if converted else (ignored, 'ignored')
        text = f"{first} DI-engine key{'s' if first != 1 else ''} {what}"
        if converted and ignored:
            text += f', {ignored} ignored'
        return f'{text}: see {path}'

    def table(self) -> str:
        """The text of ding_mapping.txt: each key with its value, what was done and why."""
        lines = [f"DI-engine keys of this run's config as tidal ran them (policy type '{self.policy_type}').",
                 "config.yaml beside this file is the result, and runs again as it is.", '']
        for title, ignored in (('Converted', False), ('Ignored', True)):
            notes = [note for note in self.notes if note.ignored == ignored]
            if not notes:
                continue
            lines.append(f'{title} ({len(notes)}):')
            for note in notes:
                lines.append(f'  {note.key} = {note.value}')
                lines.append(f'      {note.done}')
                if note.why:
                    lines.append(f'      why: {note.why}')
            lines.append('')
        return '\n'.join(lines)


_MAPPINGS: dict[int, tuple[weakref.ref, DingMapping]] = {}


def remember(cfg: Mapping, mapping: DingMapping) -> None:
    """Keep `mapping` for the compiled `cfg` until a run folder is made for it (or `cfg` is gone)."""
    for key in [key for key, (ref, _) in _MAPPINGS.items() if ref() is None]:
        del _MAPPINGS[key]
    if mapping.notes:
        _MAPPINGS[id(cfg)] = (weakref.ref(cfg), mapping)


def mapping_of(cfg: Mapping) -> Optional[DingMapping]:
    """The translation `compile_config` made for `cfg`, None for a config that needed none."""
    ref, mapping = _MAPPINGS.get(id(cfg), (None, None))
    return mapping if ref is not None and ref() is cfg else None


def write_ding_mapping(cfg: Mapping, run_dir: Path) -> None:
    """Write `ding_mapping.txt` into the run folder and say so in one line on stderr (nothing for a config
    that is tidal's own)."""
    mapping = mapping_of(cfg)
    if mapping is None:
        return
    path = Path(run_dir) / FILE_NAME
    path.write_text(mapping.table(), encoding='utf-8')
    print(f'tidal: {mapping.summary(path)}', file=sys.stderr, flush=True)
