"""``python -m smdist.catalog``: recompile the JSON twins of the catalogue's YAML files."""

import sys

from smdist.catalog.data_files import compile_all

for path in compile_all():
    print(f"wrote {path.name}", file=sys.stderr)
