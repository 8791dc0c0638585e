"""SageMaker HyperPod's EKS clusters: a job is a ``HyperPodPyTorchJob`` custom resource, run by
the HyperPod training operator, each pod's ranks started by ``hyperpodrun``.

The package keeps its ``__init__`` empty: the command line reads its options for every
``--help``, and the ``kubernetes`` client loads only when a job is sent or looked at.
"""
