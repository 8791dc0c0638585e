"""What a name given to ``status``, ``logs`` or ``stop`` stands for: the job (or search) of
the backend ``--backend`` names, or with ``--backend auto`` the first backend that has it,
those that keep records on this machine asked first.

With ``auto`` a name found nowhere here is looked for on the remote backends; but a mistyped
local name must not come back as a cloud error ("no AWS region is configured", "Unable to
locate credentials"): a close local name is suggested instead, and where a remote backend
cannot look at all the message says both where it looked here and why it was not asked.
"""

from __future__ import annotations

from typing import Any

from smdist.backends import recorded, registry
from smdist.backends.views import JobView
from smdist.errors import NO_SUCH_JOB, OPTION, Problem, SpecError, suggest

AUTO = "auto"


def options_for(backend: Any, values: dict[str, Any]) -> Any:
    """The lookup flags (--root, --region, --poll) that ``backend``'s options take."""
    fields = backend.Options.model_fields
    return backend.options({k: v for k, v in values.items() if k in fields})


def check_backend(name: str) -> None:
    valid = [AUTO, *registry.BACKENDS]
    if name not in valid:
        raise SpecError([Problem("--backend", "unknown backend", name, ", ".join(valid))], OPTION)


def find(name: str, backend: str, values: dict[str, Any]) -> JobView:
    """The job or search ``name`` stands for; SpecError (exit 2) when there is none."""
    check_backend(backend)
    asked = registry.all_backends() if backend == AUTO else [registry.get(backend)]
    here = [b for b in asked if b.finds_jobs_here]
    for candidate in here:
        found = candidate.attach(name, options_for(candidate, values))
        if found is not None:
            return found
    close = _near(name, here, values)
    remote = [b for b in asked if not b.finds_jobs_here]
    if not remote or recorded.is_path(name):
        first = here[0] if here else registry.get(registry.DEFAULT_BACKEND)
        raise _with_suggestion(first.not_found(name, options_for(first, values)), close)
    if backend != AUTO:  # asked for it by name: its own errors are the ones to show
        return remote[0].attach(name, options_for(remote[0], values))
    return _on_remote(name, remote[0], values, close)


def _near(name: str, here: list[Any], values: dict[str, Any]) -> str | None:
    known = {n for b in here for n in b.known_names(options_for(b, values)) if n != name}
    close = suggest(name, sorted(known), n=1)
    return close[0] if close else None


def _with_suggestion(error: SpecError, close: str | None) -> SpecError:
    if close is None:
        return error
    problems = [
        Problem(p.path, f"{p.message}; did you mean {close!r}?", p.value, p.valid)
        for p in error.problems
    ]
    return SpecError(problems, error.header)


def _on_remote(name: str, remote: Any, values: dict[str, Any], close: str | None) -> JobView:
    """``remote``'s job ``name``, unless the name is a near miss of one kept here or the remote
    backend cannot look: then a SpecError (exit 2) that says what is here."""
    # lazy: the cloud's error types, for a name found nowhere here
    from smdist.exit_codes import aws_errors

    options = options_for(remote, values)
    here = f"no local job or study {name!r} under {values.get('root')}"

    def nowhere(why: str, needs: str) -> SpecError:
        said = f"{here}; did you mean {close!r}? ({why})" if close else f"{here}, and {why}"
        valid = f"a name `smdist jobs` lists, or a {remote.title} job's with {needs}"
        return SpecError([Problem("job_name", said, None, valid)], NO_SUCH_JOB)

    to_look, to_enter = remote.lookup_needs
    why_not = remote.unreachable(options)
    if why_not is not None:
        raise nowhere(why_not, to_look)
    try:
        return remote.attach(name, options)
    except SpecError as missing:
        if missing.header != NO_SUCH_JOB or close is None:
            raise
        raise nowhere(f"nor is there a {remote.title} job of that name", to_look) from None
    except aws_errors() as error:
        if close is None and type(error).__name__ != "NoCredentialsError":
            raise
        raise nowhere(f"{remote.title} could not be asked: {error}", to_enter) from None
