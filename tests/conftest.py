"""Suite-wide set-up: the Hypothesis profiles, with ``ci`` as the default.

``pytest --hypothesis-profile=thorough`` selects the thorough profile instead
(Hypothesis's own pytest plugin reads the option after this file registers it).

It also refuses, for the whole suite, any import of the short top-level names
``spec``, ``impl``, ``tui`` and ``report``: installed, fencepost's code lives under
``fencepost.*`` only, and ``python -m pytest`` puts the repository root on
``sys.path``, where such an import would quietly work here and fail for users.
"""

import importlib.abc
import os
import sys

from hypothesis import settings

import fencepost.spec.profiles  # noqa: F401  (registers the profiles)

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: Top-level names that are folders of this repository but not import names of fencepost.
SHORT_NAMES = frozenset({"spec", "impl", "tui", "report"})


class _RefuseShortNames(importlib.abc.MetaPathFinder):
    """Make ``import impl`` fail loudly instead of importing a second copy of fencepost."""

    def find_spec(self, fullname, path=None, target=None):  # unannotated: importlib's signature
        if fullname.split(".", 1)[0] in SHORT_NAMES:
            raise ImportError(f"import {fullname!r}: fencepost's modules are fencepost.{fullname}; the short name is only a command-line alias")
        return None


sys.meta_path.insert(0, _RefuseShortNames())
