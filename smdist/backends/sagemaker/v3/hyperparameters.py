"""The user's hyperparameters in an SDK v3 request, so that the script gets what SDK v2 gives it.

Under SDK v2 the SDK ``json.dumps`` each value and the training toolkit ``json.loads`` it once
and builds the argument with ``str()`` (a mapping as ``a=1,b=2``, None as ``""``): the string
"1.10" reaches the script as ``1.10``, True as ``True``. SDK v3 sends strings raw
(``safe_serialize``) and its container decodes twice: ``scripts/environment.py`` decodes each
value where it parses as JSON into ``SM_HPS``, and the Torchrun and MPI drivers decode each
value of ``SM_HPS`` again before writing it back as JSON. Raw, "1.10" becomes ``1.1``, "true"
``true`` and "1e3" ``1000.0``; v2's encoding alone still loses "1.10" to the second decode.

So each value travels as the first of these wire texts with which v3's drivers give the script
the v2 toolkit's argument (and which holds no ``'``: sm_train.sh sources the exported values
inside single quotes):

1. v2's own encoding, ``json.dumps(value)``: most values (numbers, ordinary strings, lists of
   numbers). ``SM_HPS`` / ``SM_HP_<NAME>`` then hold the value as under v2 (v3 writes JSON with
   spaces where the toolkit writes it compact);
2. the toolkit's argument text as a JSON string (bools, None, mappings, lists of strings):
   ``SM_HPS`` holds that text, ``True`` rather than ``true``;
3. that text as a JSON string inside a JSON string (strings v3 would decode twice, such as
   "1.10" or "1e3"), with ``'`` written ``\\u0027``: ``SM_HPS`` holds the quoted text.

smdist's own driver reads ``hyperparameters.json`` as the toolkit does (one decode), so jobs it
launches carry v2's encoding unchanged and get the toolkit's ``SM_*`` set exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from smdist.contract.environment import argument_value


def toolkit_argument(value: Any) -> str:
    """The argument SDK v2's toolkit gives the script for the user's ``value``."""
    return argument_value(json.loads(json.dumps(value)))


def _decode(text: Any) -> Any:
    """A value decoded as v3's container does: JSON where it parses, else as it is."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def v3_driver_argument(wire: str) -> str:
    """The argument v3's Torchrun and MPI drivers give the script for the wire text ``wire``:
    decoded into ``SM_HPS``, decoded again, a string as it is and anything else as JSON."""
    value = _decode(_decode(wire))
    return value if isinstance(value, str) else json.dumps(value)


def _string_in_a_string(text: str) -> str:
    return json.dumps(json.dumps(text).replace("'", "\\u0027"))


def for_v3_drivers(value: Any) -> str:
    """The wire text that makes v3's drivers give the script ``toolkit_argument(value)``."""
    wanted = toolkit_argument(value)
    for wire in (json.dumps(value), json.dumps(wanted), _string_in_a_string(wanted)):
        if "'" not in wire and v3_driver_argument(wire) == wanted:
            return wire
    raise AssertionError(f"no wire text carries {wanted!r}")  # pragma: no cover - 3 always does


def encode(values: Mapping[str, Any], *, smdist_driver: bool) -> dict[str, str]:
    """The request's HyperParameters for the user's ``values``, sorted by name as the toolkit
    sorts the arguments (v3's drivers keep the file's order)."""
    encode_one = json.dumps if smdist_driver else for_v3_drivers
    return {name: encode_one(values[name]) for name in sorted(values)}
