"""Job names: unique within a second, within SageMaker's 63 characters, readable."""

from __future__ import annotations

import re

from smdist.backends.job_names import MAX_JOB_NAME, SUFFIX_LENGTH, unique_job_name
from smdist.spec.api_shapes import JOB_NAME


def test_names_in_the_same_second_differ():
    names = {unique_job_name("same-second", now=1_800_000_000) for _ in range(2000)}
    assert len(names) == 2000


def test_longest_prefix_fits_and_stays_valid():
    name = unique_job_name("a" * 44, now=0)
    assert len(name) == 44 + SUFFIX_LENGTH <= MAX_JOB_NAME
    assert JOB_NAME.match(name)


def test_suffix_carries_the_utc_time():
    name = unique_job_name("job", now=1_800_000_000)  # 2027-01-15 08:00:00 UTC
    assert re.fullmatch(r"job-270115-080000-[0-9a-z]{4}", name)
