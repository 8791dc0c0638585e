"""Real SageMaker training jobs as SDK v3's ``ModelTrainer`` sends them.

- ``request``, ``hyperparameters``, ``driver_config``: the request rendered from a Submission;
  ``carriage``: what v3 cannot carry, refused before any AWS call;
- ``drivers``: its ``sm_drivers`` channel;
- ``submit``: the submission itself;
- ``trainer``, ``trainer_arguments``, ``trainer_class``, ``session``: the ModelTrainer, for
  users who own their SDK calls.
"""
