"""The pydantic base every smdist config model shares.

Unknown keys are rejected (a typo such as ``process_per_host`` must never be dropped silently,
as the SageMaker SDK drops unknown distribution keys), every one of them, and the error suggests
the closest valid key, which pydantic's own ``extra="forbid"`` message does not.

Values are strict: pydantic's lax mode would read ``max_run: true`` as 1 second and
``instance_count: "2"`` or ``2.0`` as 2, so a slip in a hand-edited file would change the job
instead of being pointed out. Strict mode still takes nested dicts for models, strings for
``Literal`` choices and ints where a float is meant; free-form values (hyperparameters) are
typed ``Any``-like unions and stay as written.
"""

from pydantic import BaseModel, ConfigDict

UNKNOWN_KEY = "unknown_key"


class StrictModel(BaseModel):
    # extra="forbid" reports every unknown key, each at its path, without stopping the checks
    # of the other fields: a job file's typos are all listed at once. The "did you mean" is
    # added where pydantic's errors become Problems (smdist.spec.unknown_keys).
    # defer_build: a model's validator is built at its first use; a job file validates
    # through JobSpec's, which holds every section, so the sections' own are seldom built.
    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, frozen=False, strict=True, defer_build=True
    )
