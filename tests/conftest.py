"""Suite-wide set-up: the Hypothesis profiles, with ``ci`` as the default.

``pytest --hypothesis-profile=thorough`` selects the thorough profile instead
(Hypothesis's own pytest plugin reads the option after this file registers it).
"""

import os

from hypothesis import settings

import spec.profiles  # noqa: F401  (registers the profiles)

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
