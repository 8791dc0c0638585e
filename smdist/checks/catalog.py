"""Checks of a job against what SageMaker offers: its training containers and its API limits.

A framework_version no container has, a py_version that image was not built for, a strategy
whose library (smddp, SMP, Horovod) is not installed in the image, or an image whose Python is
outside the range of smdist's own in-container code (``smdist.runtime.PYTHON_FLOOR``) would
fail only after the job was created and the image pulled. Counts and lengths the
CreateTrainingJob API states (tags, subnets, input channels, image URI) would be refused by the
API only after the code upload. Both are answered here from the catalogue, before anything
runs (the API limits: ``smdist.checks.api_limits``). Nothing here performs I/O.
"""

from __future__ import annotations

from dataclasses import replace

from smdist.catalog import images
from smdist.checks.api_limits import check_api_limits as check_api_limits
from smdist.errors import Problem
from smdist.runtime import PYTHON_CEILING, PYTHON_FLOOR, PYTHON_RANGE
from smdist.spec.job import JobSpec

# What each library a strategy needs in its image (Strategy.image_library) is called in messages.
_LIBRARY_LABELS = {
    "smddp": "SMDDP (smdistributed.dataparallel)",
    "smp_v1": "SMP v1 (smdistributed.modelparallel)",
    "smp_v2": "SMP v2 (torch.sagemaker)",
    "horovod": "Horovod",
}


def required_library(spec: JobSpec) -> str | None:
    """The library the strategy imports from the training image, if any."""
    return spec.strategy.image_library


def check_container(spec: JobSpec) -> list[Problem]:
    """framework_version / py_version name a training image that carries the strategy's library.

    Skipped when ``code.image_uri`` names the image. With no framework_version the job runs in
    the catalogue's newest image (``smdist.checks.images``): a warning says it is not pinned.
    """
    code = spec.code
    version = code.framework_version
    if code.image_uri is not None:
        return []
    if version is None:
        return _unpinned(spec)
    framework = code.framework or spec.strategy.framework
    library = required_library(spec)
    repository = images.repository_for(framework, library)
    image = images.find_image(repository, version)
    available = images.training_images(repository)
    if image is None:
        return [
            Problem(
                "code.framework_version",
                f"no SageMaker {framework} training container ({repository}) has version {version}",
                version,
                ", ".join(i.version for i in available) + "; or set code.image_uri",
            )
        ]
    problems = []
    if code.py_version is not None and code.py_version not in image.py_versions:
        problems.append(
            Problem(
                "code.py_version",
                f"the {repository}:{image.version} image is built for "
                f"{', '.join(image.py_versions)} only",
                code.py_version,
                ", ".join(image.py_versions),
            )
        )
    problems += _past_support(image, framework, library, available)
    use = in_container_code(spec)
    if use is not None:
        problems += python_problems(spec, *use)
    if library is not None and library not in image.libraries:
        label = _LIBRARY_LABELS[library]
        carrying = [i.version for i in available if library in i.libraries]
        problems.append(
            Problem(
                "code.framework_version",
                f"the {repository}:{image.version} image does not carry {label}; "
                "the job needs code.image_uri naming an image that has it installed",
                version,
                (f"a version whose image has it: {', '.join(carrying)}; " if carrying else "")
                + "or code.image_uri",
            )
        )
    return problems


def in_container_code(spec: JobSpec) -> tuple[str, str | None] | None:
    """What of smdist's own code the job runs in the container, and how to do without it.

    The ready entry points and smdist's torchrun launcher run ``smdist.runtime`` on the image's
    Python; a user's script started by the toolkit needs none of it. (Under SDK v3 smdist's
    driver runs for some strategies: ``v3_request.carriage_problems`` checks that.)
    """
    if spec.code.entry_point is None:
        return f"the ready entry point {spec.entry_point}", "your own script as code.entry_point"
    program = spec.strategy.program(spec.entry_point)
    if program != spec.entry_point:
        # The launcher without it, torch_distributed, needs PyTorch >= 1.13.1 (Python 3.9):
        # nothing to offer instead on an older image.
        return f"smdist's torchrun launcher ({program})", None
    return None


def _pythons(image: images.TrainingImage) -> dict[str, tuple[int, int]]:
    """The image's Pythons by py_version: ``py38`` -> (3, 8) (``py3`` names none of its own)."""
    return {py: (3, int(py[3:])) for py in image.py_versions if len(py) > 3}


def _in_range(python: tuple[int, int]) -> bool:
    return PYTHON_FLOOR <= python <= PYTHON_CEILING


def python_problems(spec: JobSpec, use: str, instead: str | None) -> list[Problem]:
    """The image's Python is outside the range of smdist's in-container code, which ``use`` is.

    Nothing to say without a pinned image (the catalogue's newest is in range) or for an image
    the catalogue does not have (``check_container`` says so).
    """
    code = spec.code
    if code.image_uri is not None or code.framework_version is None:
        return []
    library = required_library(spec)
    repository = images.repository_for(code.framework or spec.strategy.framework, library)
    image = images.find_image(repository, code.framework_version)
    if image is None:
        return []
    pythons = _pythons(image)
    chosen = [code.py_version] if code.py_version in pythons else list(pythons)  # py3: any
    if not chosen or any(_in_range(pythons[py]) for py in chosen):
        return []
    why = f"{use} is smdist's in-container code, which runs on {PYTHON_RANGE}"
    others = [py for py, python in pythons.items() if _in_range(python)]
    if others:  # the same image, built for another Python too
        return [Problem("code.py_version", why, code.py_version, ", ".join(others))]
    fitting = [
        other.version
        for other in images_carrying(spec)
        if any(map(_in_range, _pythons(other).values()))
    ]
    major, minor = pythons[chosen[0]]
    return [
        Problem(
            "code.framework_version",
            f"the {repository}:{image.version} image runs Python {major}.{minor}, and {why}",
            code.framework_version,
            f"a version whose image has {PYTHON_RANGE}: {', '.join(fitting)}"
            + (f"; or {instead}" if instead else ""),
        )
    ]


def images_carrying(spec: JobSpec) -> list[images.TrainingImage]:
    """The catalogue's images for the job's framework that carry its strategy's library (every
    image of the framework when it needs none), oldest first."""
    library = required_library(spec)
    repository = images.repository_for(spec.code.framework or spec.strategy.framework, library)
    return [
        image
        for image in images.training_images(repository)
        if library is None or library in image.libraries
    ]


def unpinned_image(spec: JobSpec) -> list[Problem]:
    """The refusal of a SageMaker job whose image must carry a library but has no version: the
    SDKs choose such images by version only (v3 fails inside its image tables)."""
    if spec.code.image_uri is not None or spec.code.framework_version is not None:
        return []
    library = required_library(spec)
    if library is None:
        return []
    return [
        Problem(
            "code.framework_version",
            f"is needed on SageMaker: the {spec.strategy.kind} strategy needs {library} in the "
            "image, and the image is chosen by framework version",
            None,
            ", ".join(image.version for image in images_carrying(spec)) + "; or code.image_uri",
        )
    ]


def _unpinned(spec: JobSpec) -> list[Problem]:
    """No framework_version: the job runs in the catalogue's newest image (a warning says so);
    one that must carry a library is refused at submit (a warning here: local runs need none)."""
    refused = unpinned_image(spec)
    if refused:
        return [replace(refused[0], severity="warning")]
    framework = spec.code.framework or spec.strategy.framework
    newest = images_carrying(spec)[-1].version
    return [
        Problem(
            "code.framework_version",
            f"is not set: a SageMaker job runs in the newest {framework} training image of "
            f"smdist's catalogue ({images.catalog_date()}), {newest} today, under SDK v2 "
            "and v3 alike; it changes as the catalogue does",
            None,
            f"a version to pin, e.g. {newest}",
            severity="warning",
        )
    ]


def _past_support(
    image: images.TrainingImage,
    framework: str,
    library: str | None,
    available: list[images.TrainingImage],
) -> list[Problem]:
    """A warning for an image that no longer gets security patches, naming the newest that does
    and carries the strategy's library; where none does (Horovod, SMDDP and SMP left the images),
    one line saying so and that only an image of one's own is supported."""
    if image.patched:
        return []
    carrying = [i for i in available if library is None or library in i.libraries]
    if library is None:
        newest = images.newest_supported(images.repository_for(framework))
        supported = [newest] if newest else []
    else:
        supported = [i for i in carrying if i.patched]
    message = (
        f"the {framework} {image.version} training image is past its support (no more "
        "security patches)"
    )
    if supported or library is None or not carrying:  # none carries it: another error says so
        newest = supported[-1].version if supported else None
        with_library = f" with {library}" if library else ""
        valid = f"the newest supported{with_library}, {newest}" if newest else None
        return [Problem("code.framework_version", message, image.version, valid, "warning")]
    last = carrying[-1].version
    return [
        Problem(
            "code.framework_version",
            f"{message}, and no supported image carries {library} (the newest that does: {last})",
            image.version,
            f"{last}, or code.image_uri: an image of your own with {library}",
            severity="warning",
        )
    ]
