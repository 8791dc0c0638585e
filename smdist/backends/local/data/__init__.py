"""A local job's data: its input channels in every host (``channels``), the checkpoints kept
between runs and synced while it runs (``checkpoint_store``, ``checkpoint_sync``), and its model
and output (``artifacts``)."""
