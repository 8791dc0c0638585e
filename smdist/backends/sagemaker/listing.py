"""``smdist jobs --backend sagemaker``: a region's training jobs as the rows ``smdist jobs``
shows for local ones (name, kind, status, start, duration)."""

from __future__ import annotations

import time
from typing import Any

from smdist.backends.job_rows import Row

PAGE = 100  # ListTrainingJobs' largest page: the newest jobs


def training_job_rows(boto_session: Any) -> list[Row]:
    client = boto_session.client("sagemaker")
    listed = client.list_training_jobs(
        SortBy="CreationTime", SortOrder="Descending", MaxResults=PAGE
    )
    rows = []
    for summary in listed.get("TrainingJobSummaries", []):
        started = summary["CreationTime"].timestamp()
        ended = summary.get("TrainingEndTime")
        end = ended.timestamp() if ended is not None else time.time()
        rows.append(
            Row(
                summary["TrainingJobName"],
                "job",
                summary["TrainingJobStatus"],
                round(started, 3),
                round(max(0.0, end - started), 3),
            )
        )
    return rows
