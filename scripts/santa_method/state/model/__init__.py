"""The state santa keeps on disk, as typed records: a run and a batch.

Why typed: a run's state is read and changed by the faces that drive it
(`santa round`, `santa gate`, the hooks, the headless loop) and a batch's
by its files, its book, the headless batch, the batch inside Claude Code
and the CI reports; a misspelt key in a plain dict is a bug found at run
time, in someone's run. Here each record says what it holds, and mypy
checks every use.

Why plain dataclasses and one generic conversion (`reading.py`): the JSON
files are a contract (a run is gated, resumed and reported from its file,
by this version or the next), and a record's fields, declared in the order
its file holds them, already say it; a state loaded and saved again is the
same file, byte for byte. Files written by earlier releases load (keys
added since have defaults), and anything else is refused with a sentence
naming the key (`StateError`), never a KeyError.

- `run.py`: `RunState`, its `Target`, `Round`s with their `Slot`s and
  `Gate`s, `Fix`es, the `Fixer`'s assignment, the `Escalation`;
- `batch.py`: `BatchState`, its options, `ItemRecord`s, `Wave`s with their
  `PlanRecord`, outcomes and `ScreenRecord`s;
- `reading.py`: the conversion, both ways, and `StateError`.

Import each from its module (`santa_method.state.model.run`): a hook that
loads a run does not pay for the batch's records.
"""
