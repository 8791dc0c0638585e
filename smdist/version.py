"""smdist's version, in a module of its own: the package's ``__version__`` and the command's
``--version`` read it, and the command line may not import the package's public API above it."""

__version__ = "0.1.0"
