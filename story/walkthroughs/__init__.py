"""The built-in walkthroughs: where they are, their teaching order, and names resolved to files.

The walkthroughs are scenario files shipped as this package's data, beside
this loader (``story/walkthroughs/``); this module, above the scenario
format, is the one place that knows where. ``fencepost replay NAME`` and ``fencepost tui NAME``
both resolve names here; the format itself only reads the file it is given.
"""

from __future__ import annotations

from pathlib import Path

from fencepost.spec.formats.scenario import ScenarioError, _one_line, load_scenario


#: Where the built-in walkthroughs live: this package's folder (package data), the
#: same folder in a checkout, an editable install and a wheel.
BUILTIN_DIR = Path(__file__).resolve().parent

#: The walkthrough plain ``fencepost`` opens: the curriculum's first.
DEFAULT_WALKTHROUGH = "onboarding"

#: The curriculum: the built-in walkthroughs in teaching order, one name a line
#: (``#`` starts a comment). Adding a walkthrough to it is one line there.
CURRICULUM_FILE = BUILTIN_DIR / "curriculum.txt"


def curriculum() -> list[str]:
    """The walkthroughs in teaching order, as ``CURRICULUM_FILE`` lists them (missing file: none)."""
    try:
        text = CURRICULUM_FILE.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [name for line in text.splitlines() if (name := line.split("#", 1)[0].strip())]


def builtin_names() -> list[str]:
    """The built-in walkthroughs' names: the curriculum's, in its order, then any it
    does not list, alphabetically. A name the curriculum lists without a file is left out."""
    names = sorted(path.stem for path in BUILTIN_DIR.glob("*.toml"))
    order = {name: position for position, name in enumerate(curriculum())}
    return sorted(names, key=lambda name: (order.get(name, len(order)), name))


def builtin_summary(name: str) -> str:
    """One line about a built-in walkthrough: "you will learn" and its ``meta.learn``, else its title.

    Raises:
        ScenarioError: no built-in has that name, or it does not load.
    """
    if name not in builtin_names():
        raise _unknown(name)
    scenario = load_scenario(BUILTIN_DIR / f"{name}.toml")
    learn = scenario.meta.get("learn")
    return _one_line(f"you will learn {learn}" if isinstance(learn, str) and learn.strip() else scenario.title)


def resolve(name_or_path: str | Path) -> Path:
    """The file for a built-in walkthrough name, or ``name_or_path`` itself if it is a file.

    Raises:
        ScenarioError: neither a built-in name nor an existing file; the one
            line lists the built-in names.
    """
    text = str(name_or_path)
    if text in builtin_names():
        return BUILTIN_DIR / f"{text}.toml"
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.is_dir():
        raise ScenarioError(f"{text}: is a folder, not a scenario file (give one .toml file, or a built-in name)")
    raise _unknown(text)


def _unknown(text: str) -> ScenarioError:
    return ScenarioError(
        f"{text}: no such scenario file or built-in walkthrough (built-ins: {', '.join(builtin_names())})"
    )
