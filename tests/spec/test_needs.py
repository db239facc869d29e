"""A scenario's ``needs``, and every built-in walkthrough true on every shipped scheduler that can run it.

``fencepost replay NAME`` and ``fencepost tui NAME`` run a walkthrough with no
flag on the first shipped scheduler that offers what it needs
(``fencepost.story.shipped``); these tests hold the walkthroughs to every step's
``expect`` there and on every other shipped scheduler that offers it too.
"""

from __future__ import annotations

import pytest

from fencepost.story.shipped import DEFAULT_IMPL, SHIPPED, open_for, scheduler_for
from fencepost.spec.checkers.capabilities import detect
from fencepost.spec.checkers.replay import replay
from fencepost.cli import main
from fencepost.spec.arguments import UsageError, load_factory
from fencepost.spec.formats.scenario import (
    NEEDS, Scenario, ScenarioError, dumps_scenario, load_scenario, loads_scenario, needs_of,
)
from fencepost.story.walkthroughs import builtin_names, resolve
from fencepost.spec.formats.scenario import is_variant_need
from fencepost.spec.protocol import BATCH_OPERATIONS, RESTART

WALKTHROUGHS = {name: load_scenario(resolve(name)) for name in builtin_names()}


def shipped_cases() -> list:
    """(walkthrough, scheduler) for every shipped scheduler that offers all the walkthrough needs."""
    return [pytest.param(name, shipped.name, id=f"{name}-{shipped.name}")
            for name, scenario in WALKTHROUGHS.items()
            for shipped in SHIPPED if set(needs_of(scenario)) <= shipped.offers]


@pytest.mark.parametrize("name", builtin_names())
def test_replay_of_every_walkthrough_with_no_flag_exits_0(name: str, capsys) -> None:
    assert main(["replay", name]) == 0
    out = capsys.readouterr().out
    assert "MISMATCH" not in out and out.splitlines()[-1].startswith("ok: ")


@pytest.mark.parametrize(("name", "impl"), shipped_cases())
def test_every_expect_holds_on_every_shipped_scheduler_that_offers_what_the_walkthrough_needs(name: str, impl: str) -> None:
    replayed = replay(WALKTHROUGHS[name], load_factory(impl)())
    assert [(r.number, r.mismatch) for r in replayed if r.mismatch] == []
    assert len(replayed) == len(WALKTHROUGHS[name].steps)


def test_every_walkthrough_runs_on_some_shipped_scheduler_and_the_default_runs_most() -> None:
    chosen = {name: scheduler_for(needs_of(scenario)) for name, scenario in WALKTHROUGHS.items()}
    assert chosen["durability"] == "impl.durable:temporary"
    assert [name for name, impl in chosen.items() if impl != DEFAULT_IMPL] == ["durability"]


@pytest.mark.parametrize("shipped", SHIPPED, ids=lambda s: s.name)
def test_what_the_table_says_a_shipped_scheduler_offers_is_what_it_offers(shipped) -> None:
    factory = load_factory(shipped.name)
    assert detect(factory).restart == (RESTART in shipped.offers)
    sample = factory()
    assert callable(getattr(sample, "prune", None)) == ("prune" in shipped.offers)
    assert all(callable(getattr(sample, op, None)) for op in BATCH_OPERATIONS) == ("batch" in shipped.offers)
    assert all(name in NEEDS or is_variant_need(name) for name in shipped.offers)


def test_durability_opens_on_the_durable_scheduler_and_says_why(capsys) -> None:
    assert main(["replay", "durability"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("replay durability against impl.durable:temporary: ")
    assert lines[1] == "note: it needs restart: opened on impl.durable:temporary (--impl chooses another)"


def test_a_named_scheduler_is_used_as_given_and_refused_for_a_restart_it_cannot_take(capsys) -> None:
    assert main(["replay", "durability", "--impl", "impl:Scheduler"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "step 6 is a restart" in err


def test_a_restart_step_implies_the_need_without_declaring_it() -> None:
    durability = WALKTHROUGHS["durability"]
    undeclared = Scenario(durability.title, durability.steps)
    assert undeclared.needs == () and needs_of(undeclared) == (RESTART,)
    assert open_for(undeclared).name == "impl.durable:temporary"
    assert open_for(Scenario("t", ()), "impl.simple:SimpleScheduler").reason is None


HEAD = 'title = "t"\n'
KNOWN = "known: restart, prune, batch, or a variant NAME=VALUE"
STEPS = '\n[[steps]]\nop = "add_worker"\nworker = "w1"\ncapacity = 1\n'


def test_needs_is_read_and_written_back_in_place() -> None:
    text = HEAD + 'needs = [\n    "restart",\n]\n' + STEPS  # arrays one item a line, as tomli-w writes them
    scenario = loads_scenario(text)
    assert scenario.needs == ("restart",) and needs_of(scenario) == ("restart",)
    assert dumps_scenario(scenario) == text
    assert loads_scenario(dumps_scenario(scenario, "json"), "json") == scenario
    assert "needs" not in dumps_scenario(loads_scenario(HEAD + STEPS))


@pytest.mark.parametrize(
    ("needs", "message"),
    [
        ('"restart"', "field 'needs': expected an array of capability names (restart, prune, batch), got \"restart\""),
        ('["teleport"]', f"field 'needs': unknown capability \"teleport\" ({KNOWN})"),
        ("[1]", f"field 'needs': unknown capability 1 ({KNOWN})"),
        ('[["restart"]]', f"field 'needs': unknown capability [\"restart\"] ({KNOWN})"),
        ('["order=random"]', f"field 'needs': unknown capability \"order=random\" ({KNOWN})"),
        ('["order=priority"]', f"field 'needs': unknown capability \"order=priority\" ({KNOWN})"),
        ('["restart", "restart"]', "field 'needs': named twice: \"restart\""),
    ],
)
def test_bad_needs_are_one_line_naming_the_field_and_value(needs: str, message: str, tmp_path, capsys) -> None:
    with pytest.raises(ScenarioError) as info:
        loads_scenario(HEAD + f"needs = {needs}\n" + STEPS, source="n.toml")
    assert str(info.value) == f"n.toml: {message}"
    path = tmp_path / "n.toml"
    path.write_text(HEAD + f"needs = {needs}\n" + STEPS)
    assert main(["replay", str(path)]) == 2
    assert capsys.readouterr().err == f"fencepost replay: error: {path}: {message}\n"


@pytest.mark.parametrize("needs", [["order=fifo"], ["tokens=opaque"], ["batch", "restart", "interval=closed"]])
def test_a_need_no_shipped_scheduler_offers_is_one_line_exit_2(needs: list[str], tmp_path, capsys) -> None:
    wanted = ", ".join(sorted(needs))
    with pytest.raises(UsageError, match=f"^needs {wanted}, which no shipped scheduler offers together; name one with --impl$"):
        scheduler_for(needs)
    path = tmp_path / "n.toml"
    path.write_text(HEAD + f"needs = {needs!r}\n".replace("'", '"') + STEPS)
    assert loads_scenario(path.read_text()).needs == tuple(needs)
    assert main(["replay", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"fencepost replay: error: {path}: needs {wanted}, which no shipped")


def test_a_variant_need_is_kept_after_the_named_ones() -> None:
    scenario = loads_scenario(HEAD + 'needs = ["interval=closed", "restart"]\n' + STEPS)
    assert needs_of(scenario) == ("restart", "interval=closed")


PRUNE_AND_BATCH = (
    '\n[[steps]]\nop = "submit_many"\ntasks = [{}, {}]\nexpect = [{ task_id = 1 }, { task_id = 2 }]\n'
    '\n[[steps]]\nop = "dispatch_many"\nworker = "w1"\nnow = 0\nduration = 5\nlimit = 2\nexpect = [{ task_id = 1 }]\n'
    '\n[[steps]]\nop = "complete"\ntask_id = 1\ntoken = 1\nnow = 1\nexpect = { accepted = true }\n'
    '\n[[steps]]\nop = "prune"\nbefore = 2\nnow = 2\nexpect = { forgotten = 1 }\n'
)


def test_a_scenario_that_needs_prune_and_batches_opens_on_the_default_with_no_flag(tmp_path, capsys) -> None:
    path = tmp_path / "n.toml"
    path.write_text(HEAD + 'needs = ["prune", "batch"]\n' + STEPS + PRUNE_AND_BATCH)
    scenario = load_scenario(path)
    assert needs_of(scenario) == ("prune", "batch")
    assert open_for(scenario).name == DEFAULT_IMPL and open_for(scenario).reason is None  # what tui NAME and o open
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"replay {path} against {DEFAULT_IMPL}: ") and out[-1] == "ok: all 4 expectations hold over 5 steps"
