"""Every integration test marks the jobs it starts in this process (``smdist.fit``, ``launch``)
with its directory, so ``local_jobs.assert_nothing_left`` finds what they leave running even
inside hosts that see only ``/opt/ml``."""

from __future__ import annotations

import pytest
from local_jobs import LEFTOVER_MARKER


@pytest.fixture(autouse=True)
def _mark_jobs(tmp_path, monkeypatch):
    monkeypatch.setenv(LEFTOVER_MARKER, str(tmp_path))
