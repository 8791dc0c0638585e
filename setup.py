"""Which packages the wheel holds; everything else about the build is in pyproject.toml.

Every package under smdist/ is found (none is listed by hand, so a new one cannot be left out),
and entry_points/ ships as smdist.entry_points: the ready scripts live at the top of the
repository, and pyproject's own ``packages.find`` cannot add a package from another directory.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["smdist", "smdist.*"]), "smdist.entry_points"])
