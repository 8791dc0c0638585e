"""A corpus of job files smdist must refuse, and of hostile-looking values it must deliver.

``REFUSED``: each case is a job file (bytes) and the field its refusal must name. ``ACCEPTED``:
jobs whose hyperparameter or environment value looks like a shell command and must arrive
unchanged. The cases are data; ``tests/unit/test_hostile_corpus.py`` runs them.
"""

from __future__ import annotations

from hostile import careless, injection, limits
from hostile.accepted import ACCEPTED, Accepted
from hostile.build import Case

REFUSED: list[Case] = [*injection.REFUSED, *careless.REFUSED, *limits.REFUSED]

__all__ = ["ACCEPTED", "REFUSED", "Accepted", "Case"]
