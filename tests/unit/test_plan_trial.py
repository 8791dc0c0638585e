"""A trial of a search is the search's plan bound to the trial's values, not a new plan."""

from __future__ import annotations

import json
from pathlib import Path

from smdist.checks.reading import load
from smdist.planning.plan import Plan, plan

TUNING = Path(__file__).resolve().parents[2] / "examples" / "tuning"


def test_a_trial_is_the_search_plan_with_its_values_and_name():
    search = plan(load(next(iter(sorted(TUNING.glob("*.yaml"))))))
    assert search.spec.tuning is not None
    trial = search.for_trial("lr-sweep-3", {"learning_rate": 0.05})
    assert isinstance(trial, Plan)
    assert trial.spec.name == "lr-sweep-3" and trial.spec.tuning is None
    assert trial.hyperparameters == {**search.hyperparameters, "learning_rate": 0.05}
    assert trial.spec.hyperparameters == trial.hyperparameters
    assert json.loads(trial.wire_hyperparameters["learning_rate"]) == 0.05
    # What the plan rendered is carried over, not rendered again.
    assert trial.launch is search.launch and trial.topology is search.topology
    assert trial.environment is search.environment
    assert trial.job_name.startswith("lr-sweep-3-")
    assert search.hyperparameters.get("learning_rate") != 0.05  # the search's plan is untouched


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_plan_travels_as_its_record_and_comes_back_equal():
    # The local-mode supervisor runs the plan `launch` showed, read back, never planned again.
    for path in sorted(EXAMPLES.glob("*.yaml")):
        shown = plan(load(path))
        record = json.loads(json.dumps(shown.to_record(), default=str))
        again = Plan.from_record(record, shown.spec)
        assert again == shown, path.name
