"""Ready training scripts, one per strategy and framework (shipped as smdist.entry_points)."""
