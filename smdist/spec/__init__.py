"""The job as a user writes it: typed models (``job``: JobSpec, Code, Checkpoint, ...; the
strategies live in ``smdist.strategies``), the cluster, and how a job file is read.

The lowest layer above the catalogue: it knows nothing of checks, planning or backends.
"""
