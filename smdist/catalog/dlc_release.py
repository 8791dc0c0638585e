"""Check ``images.yaml`` against a checkout of aws/deep-learning-containers (a maintainer tool).

    python -m smdist.catalog.dlc_release PATH/TO/deep-learning-containers [--today YYYY-MM-DD]

The DLC repository publishes one small YAML file per SageMaker training image under
``docs/src/data/<repository>/<version>-<accelerator>-sagemaker.yml``: its Python, its tags, its
GA and end-of-patch dates. This command reads those files and says, line by line, where the
catalogue differs: a released version it lacks (with the entry to add), a tag it names that is
not published, and which versions are still patched on ``--today``. Exit 0 when the catalogue
agrees, 1 when it should be refreshed. It writes nothing: the catalogue keeps its comments and
sources, and a person dates the change.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path

from smdist.catalog import images
from smdist.yaml_text import parse_yaml

# The DLC repository's data folders -> the catalogue family that holds their versions.
FAMILIES = {
    "pytorch-training": "pytorch-training",
    "pytorch": "pytorch-training",  # the Amazon Linux 2023 line (2.11+)
    "tensorflow-training": "tensorflow-training",
}
_ACCELERATORS = {"gpu": "gpu", "cuda": "gpu", "cpu": "cpu"}


@dataclass(frozen=True)
class Release:
    """One published SageMaker training image, as the DLC repository describes it."""

    repository: str
    family: str
    version: str  # major.minor, as the data file names it
    processor: str
    python: str
    tags: tuple[str, ...]
    eop: str

    @property
    def full_version(self) -> str:
        """The patch version its first tag carries (``2.12.1`` for the 2.12 line)."""
        return self.tags[0].split("-", 1)[0] if self.tags else self.version


def read_releases(checkout: Path) -> list[Release]:
    """Every SageMaker training image of the families smdist catalogues."""
    found = []
    for folder, family in FAMILIES.items():
        for path in sorted((checkout / "docs" / "src" / "data" / folder).glob("*-sagemaker.yml")):
            data = parse_yaml(path.read_text(encoding="utf-8"))
            processor = _ACCELERATORS.get(str(data.get("accelerator")))
            if processor is None:
                continue
            found.append(
                Release(
                    repository=folder,
                    family=family,
                    version=str(data["version"]),
                    processor=processor,
                    python=str(data.get("python", "")),
                    tags=tuple(str(tag) for tag in data.get("tags") or ()),
                    eop=str(data.get("eop", "")),
                )
            )
    return found


def differences(releases: list[Release], today: str) -> list[str]:
    """What the catalogue should change to agree with ``releases`` on ``today``."""
    lines = []
    for release in releases:
        image = images.find_image(release.family, release.full_version)
        where = f"{release.repository} {release.full_version} ({release.processor})"
        if image is None or image.version != release.full_version:
            lines.append(
                f"missing: {where}: add under families.{release.family}.versions: "
                f'"{release.full_version}": {{py: [{release.python}], libraries: [], '
                f"repository: {release.repository}, tags: {{{release.processor}: "
                f'"{release.tags[0] if release.tags else "?"}"}}}}'
            )
            continue
        tag = image.tag(release.processor, release.python or image.py_versions[-1])
        if image.repository != release.repository:
            lines.append(f"repository: {where}: the catalogue says {image.repository}")
        if tag not in release.tags:
            lines.append(
                f"tag: {where}: {tag} is not published; published: {', '.join(release.tags)}"
            )
        patched = bool(release.eop) and release.eop >= today
        if patched != image.patched:
            state = "still patched" if patched else "past its support"
            lines.append(f"patched: {where} is {state} on {today} (end of patch {release.eop})")
    return sorted(set(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m smdist.catalog.dlc_release")
    parser.add_argument("checkout", type=Path, help="a checkout of aws/deep-learning-containers")
    parser.add_argument("--today", default=datetime.date.today().isoformat())
    args = parser.parse_args(argv)
    releases = read_releases(args.checkout)
    if not releases:
        print(
            f"no SageMaker training image data under {args.checkout}/docs/src/data", file=sys.stderr
        )
        return 2
    found = differences(releases, args.today)
    for line in found:
        print(line)
    print(f"{len(releases)} published images read; catalogue of {images.catalog_date()}: "
          f"{'agrees' if not found else f'{len(found)} difference(s)'}")  # fmt: skip
    return 1 if found else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
