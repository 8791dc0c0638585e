"""SageMaker HyperPod Slurm clusters: a job spec submitted as an sbatch script.

``HyperPodSlurmBackend`` (``backend``) puts it on the backend interface. A dry run is the
script (``submission``, ``sbatch``); a submit writes the job's folder on the cluster's shared
file system and runs sbatch there or on a head node over ssh (``sending``, ``head``); every
node's first step gives the training script SageMaker's contract (``node_start``); status,
logs and stop read Slurm and the job folder (``job``, ``view``, ``slurm``).

The package stays light: its options are read for every ``--help``, the rest loads on use.
"""
