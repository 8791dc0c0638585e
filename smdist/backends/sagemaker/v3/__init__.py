"""Real SageMaker training jobs as SDK v3's ``ModelTrainer`` sends them: the request rendered
from a Submission (``request``, ``hyperparameters``), its drivers channel (``drivers``), the
submission itself (``submit``) and the ModelTrainer for users who own their SDK calls
(``trainer``).
"""
