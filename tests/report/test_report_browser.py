"""Report pages opened in a real headless Chromium (the distribution's, driven by Playwright).

Each test opens a generated page from a file URL and checks what a person
would see: no console message, no request but the page itself, the failing
step or stretch present and marked, hostile names shown as text, the layout
at a phone's width and printed. Screenshots go to the test's tmp folder.

Skipped, saying why, where Chromium is not installed (``.ci/run`` installs
it); Playwright itself is a test dependency, so its import is never skipped.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from pages import HOSTILE_NAME, ZOMBIE, ZOMBIE_FAILING_CALL, hostile_history, make_page, write_hostile_scenario

TESTS = Path(__file__).resolve().parents[1]

#: The distribution's Chromium (Debian's ``chromium`` package); FENCEPOST_CHROMIUM names another.
CHROMIUM = os.environ.get("FENCEPOST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium; .ci/run does)")

#: A desktop window and a phone's, in CSS pixels.
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Opened:
    """A page opened in the browser, with everything it said and asked for."""

    def __init__(self, browser, path: Path, viewport: dict) -> None:
        self.page = browser.new_page(viewport=viewport)
        self.console: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url, wait_until="load")

    def assert_quiet(self) -> None:
        """No console message at all (a policy violation is one), and no request but the page itself."""
        assert self.console == []
        assert self.requests == [self.url]
        assert self.dialogs == []

    def shot(self, path: Path, **options) -> Path:
        self.page.screenshot(path=str(path), **options)
        assert path.stat().st_size > 1000
        return path


def test_a_counterexample_page_renders_quietly_with_its_divergence_marked(browser, tmp_path):
    page = make_page(TESTS / "regressions" / "token_reuse.toml", tmp_path / "token_reuse.html",
                     "--impl", "impl.mutants.token_reuse:Scheduler")
    opened = Opened(browser, page, DESKTOP)
    row = opened.page.locator("tr#s5")
    assert row.is_visible() and "first" in row.get_attribute("class")
    assert "first problem" in row.inner_text()
    assert opened.page.locator("#divergence").is_visible()
    assert "token 2" in opened.page.locator("#divergence table.versus").inner_text()
    # The script ran (the policy admits it by its hash): it marked the page and selected the failing row.
    assert opened.page.evaluate("document.documentElement.classList.contains('js')")
    assert "selected" in row.get_attribute("class")
    opened.shot(tmp_path / "token_reuse.png", full_page=True)
    opened.assert_quiet()


def test_clicking_a_lease_selects_the_step_that_granted_it(browser, tmp_path):
    opened = Opened(browser, make_page("fresh-token", tmp_path / "fresh.html"), DESKTOP)
    bar = opened.page.locator("g.lease").first
    step = bar.get_attribute("data-s")
    bar.click()
    assert "selected" in opened.page.locator(f"tr#s{step}").get_attribute("class")
    opened.page.locator("#only-notable").check()
    shown = opened.page.locator(".steps-table tbody tr:visible")
    assert 0 < shown.count() < opened.page.locator(".steps-table tbody tr").count()
    opened.assert_quiet()


def test_a_history_page_marks_the_stretch_and_the_call_no_order_explains(browser, tmp_path):
    opened = Opened(browser, make_page(ZOMBIE, tmp_path / "zombie.html"), DESKTOP)
    call = opened.page.locator(f"tr#c{ZOMBIE_FAILING_CALL}")
    assert call.is_visible() and "no order explains this result" in call.inner_text()
    assert opened.page.locator("#stretch-mark rect.stretch").count() == 1
    assert opened.page.locator(f'g.call.failing[data-c="{ZOMBIE_FAILING_CALL}"]').count() == 1
    assert "rejected (stale_token)" in opened.page.locator("#stretch").inner_text()
    opened.shot(tmp_path / "zombie.png", full_page=True)
    opened.assert_quiet()


@pytest.mark.parametrize("make", [write_hostile_scenario, hostile_history], ids=["scenario", "history"])
def test_hostile_input_renders_as_text(browser, tmp_path, make):
    source = make(tmp_path / ("hostile.toml" if make is write_hostile_scenario else "hostile.jsonl"))
    opened = Opened(browser, make_page(source, tmp_path / "hostile.html"), DESKTOP)
    assert opened.page.locator("img").count() == 0
    assert opened.page.locator("script").count() == 2
    assert HOSTILE_NAME in opened.page.locator("body").inner_text()
    assert HOSTILE_NAME in opened.page.locator("svg.names").text_content()
    opened.shot(tmp_path / "hostile.png", full_page=True)
    opened.assert_quiet()


def test_at_a_phone_width_only_the_pictures_scroll_sideways(browser, tmp_path):
    page = make_page(TESTS / "regressions" / "token_reuse.toml", tmp_path / "phone.html",
                     "--impl", "impl.mutants.token_reuse:Scheduler")
    opened = Opened(browser, page, PHONE)
    assert opened.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert opened.page.locator("tr#s5").is_visible()
    opened.shot(tmp_path / "phone.png", full_page=True)
    opened.assert_quiet()


def test_printed_every_step_is_laid_out_and_the_controls_are_gone(browser, tmp_path):
    # As wide as an A4 page's printable width, in CSS pixels: narrower than the lease picture on screen.
    opened = Opened(browser, make_page("onboarding", tmp_path / "print.html"), {"width": 680, "height": 900})
    opened.page.emulate_media(media="print")
    assert not opened.page.locator("#only-notable").is_visible()
    assert opened.page.locator(".steps-table tbody tr:visible").count() == opened.page.locator(".steps-table tbody tr").count()
    # The lease picture shrinks to the page instead of running off its edge.
    assert opened.page.evaluate("(() => { const l = document.querySelector('.lanes'); return l.scrollWidth <= l.clientWidth; })()")
    pdf = tmp_path / "print.pdf"
    opened.page.pdf(path=str(pdf))
    assert pdf.read_bytes().startswith(b"%PDF")
    opened.assert_quiet()


def test_a_big_failing_history_is_drawn_compact_and_opens_scrolled_to_the_stretch(browser, tmp_path):
    from fencepost.bench import linearize as linearize_cost
    from fencepost.spec.formats.history import write_history

    source = tmp_path / "broken.jsonl"
    write_history(source, linearize_cost.broken(linearize_cost.generate(4, 2000, seed=1)))
    opened = Opened(browser, make_page(source, tmp_path / "broken.html"), DESKTOP)
    assert opened.page.locator("g.call").count() < 10  # the stretch's calls only; the rest are paths
    assert opened.page.locator("path.c-call").count() >= 1
    seen = opened.page.evaluate("""(() => {
        const lanes = document.querySelector('.lanes'), box = lanes.getBoundingClientRect();
        const mark = document.querySelector('#stretch-mark rect').getBoundingClientRect();
        return [lanes.scrollLeft, mark.left >= box.left && mark.right <= box.right];
    })()""")
    assert seen[0] > 0 and seen[1], seen
    opened.shot(tmp_path / "broken.png")
    opened.assert_quiet()


def test_at_1280_pixels_the_state_tables_show_every_column(browser, tmp_path):
    """The implementation's and the model's tables side by side were cut at 1280 px (last column `prior`)."""
    page = make_page(TESTS / "regressions" / "closed_interval.toml", tmp_path / "closed_interval.html",
                     "--impl", "impl.mutants.closed_interval:Scheduler")
    opened = Opened(browser, page, DESKTOP)
    scrolls = opened.page.locator(".pair .scroll")
    assert scrolls.count() == 2
    for n in range(2):
        width, shown = scrolls.nth(n).evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert width <= shown, f"state table {n} needs {width} px and shows {shown}"
    opened.assert_quiet()
