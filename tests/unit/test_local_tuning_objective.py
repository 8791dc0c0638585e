"""A local trial's objective, read from its log lines with the metric definitions SageMaker uses:
the regex's first group, the last value winning, nan and inf kept as the numbers they are."""

from __future__ import annotations

import math

import pytest

from smdist.backends.local.tuning.objective import (
    MissingMetric,
    ObjectiveReader,
    final_value,
    objective_regex,
    step_of,
    value_of,
)
from smdist.runtime.metrics import format_metrics, metric_definitions

LOSS = objective_regex(metric_definitions(), "train:loss")


def test_the_last_value_is_the_objective_as_sagemaker_takes_the_final_value():
    lines = [
        "algo-1 | [metrics] epoch=0 loss=2.5",
        "algo-1 | some other output",
        "algo-1 | [metrics] epoch=1 loss=1.25",
        "algo-1 | [metrics] epoch=2 loss=1.75",
    ]
    assert final_value(LOSS, lines) == 1.75


def test_a_log_without_the_metric_has_no_objective():
    assert final_value(LOSS, ["algo-1 | [metrics] accuracy=0.9", "algo-1 | loss is low"]) is None
    assert value_of(LOSS, "[metrics] val_loss=0.3") is None  # another metric's name


@pytest.mark.parametrize(
    ("text", "expected"),
    [("[metrics] loss=nan", math.nan), ("[metrics] loss=inf", math.inf),
     ("[metrics] loss=-inf", -math.inf), ("[metrics] loss=1e-3", 1e-3)],
)  # fmt: skip
def test_nan_and_inf_are_read_as_numbers(text, expected):
    value = value_of(LOSS, text)
    assert value is not None
    assert math.isnan(value) if math.isnan(expected) else value == expected


def test_the_lines_the_ready_scripts_print_are_read():
    line = format_metrics(step=40, epoch=1, loss=0.4123, samples_per_sec=2311.4)
    reader = ObjectiveReader(LOSS)
    report = reader.feed_log_line(f"algo-1 r0 | {line}")
    assert report is not None and report.value == pytest.approx(0.4123) and report.step == 1


def test_smdist_notes_never_count_even_when_they_quote_a_metric_line():
    reader = ObjectiveReader(LOSS)
    assert reader.feed_log_line("smdist     | [failure] last output: [metrics] loss=0.1") is None
    assert reader.last is None


def test_a_users_own_regex_takes_its_first_group():
    definitions = [{"Name": "validation:acc", "Regex": r"val acc: ([0-9.]+)%"}]
    regex = objective_regex(definitions, "validation:acc")
    assert final_value(regex, ["algo-1 | epoch 1 val acc: 71.5%", "algo-1 | val acc: 80%"]) == 80
    assert value_of(regex, "val acc: .%") is None  # no number: skipped as SageMaker skips it
    with pytest.raises(MissingMetric):
        objective_regex(definitions, "train:loss")


def test_steps_come_from_epoch_or_step_else_from_the_count_and_repeat_steps_are_not_reported():
    assert step_of("[metrics] step=7 loss=1") == 7
    assert step_of("[metrics] step=7 epoch=2 loss=1") == 2
    assert step_of("[metrics] loss=1") is None
    reader = ObjectiveReader(LOSS)
    first = reader.feed_text("[metrics] loss=3")
    second = reader.feed_text("[metrics] loss=2")
    assert (first.step, second.step) == (0, 1)  # type: ignore[union-attr]
    assert reader.feed_text("[metrics] epoch=1 loss=1") is None  # epoch 1 was reported
    assert reader.last == 1.0 and reader.values == [3.0, 2.0, 1.0]
