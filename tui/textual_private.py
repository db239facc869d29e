"""Every use of Textual's and Rich's private internals, in one place.

The app needs four things their public APIs do not offer, each for speed or
for a notice it must take back (tests/tui/test_repaint.py and the notice
tests fail if one goes):

* ``divide_line``: Rich's own line breaker, so a panel counts the lines its
  text wraps into exactly as Textual's ``Content.get_height`` cuts them,
  without building the lines to measure them (``rich._wrap``).
* ``cached_rows``: the rows Textual keeps for a widget as last drawn, by height,
  and the heights it will draw again (``Widget._styles_cache``), so a list
  that scrolls by a row hands back the rows it drew before.
* ``KeepLayoutOnVirtualSize``: a widget that does not scroll need not lay the
  screen out again when a layout gives it a new virtual size (an override of
  ``Widget._size_updated``).
* ``take_back_notice``: take down a notification before its timeout
  (``App._notifications``, ``App._unnotify``).

``CHECKED`` says the releases each was checked against: every release of
Textual from 8.2.0 to 8.2.8 and of Rich from 14.2.0 (Textual 8.2's lowest) to
15.0.0, by ``tests/tui/test_textual_private.py``, which fails when one of
these names or signatures is not what this module expects. ``pyproject.toml``
allows exactly that range; widening it means checking these again.
"""

from __future__ import annotations

from rich._wrap import divide_line  # noqa: F401 - re-exported: the one private name of Rich
from textual.app import App
from textual.geometry import Size
from textual.notifications import Notification
from textual.strip import Strip
from textual.widget import Widget

#: The releases these internals were checked against, lowest and highest.
CHECKED = {"textual": ("8.2.0", "8.2.8"), "rich": ("14.2.0", "15.0.0")}


def cached_rows(widget: Widget) -> tuple[int, dict[int, Strip], set[int]]:
    """``(width, rows, dirty)`` of the rows Textual keeps for ``widget``.

    ``width`` is the outer width they were drawn at, ``rows`` the strips by
    height as last drawn (the caller may put a strip back in), ``dirty`` the
    heights Textual will draw again (the caller may take a height out once it
    put its row back). O(1).
    """
    cache = widget._styles_cache
    return cache._width, cache._cache, cache._dirty_lines


class KeepLayoutOnVirtualSize:
    """A widget whose new virtual size never lays the screen out again by itself.

    Textual stores the virtual size it gives a widget in a layout through a
    reactive that lays the screen out once more, right after the layout that
    resized it; a widget that does not scroll, or whose layout placed the
    content already, changes nothing there. A scrollbar that comes or goes
    still lays out (its own reactive). Subclasses that must hear of the new
    virtual size override ``virtual_size_given``. A mixin, listed before the
    widget class it changes (not a widget itself: it adds no CSS type).
    """

    virtual_size: Size

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        changed = virtual_size != self.virtual_size
        resized = super()._size_updated(size, virtual_size, container_size, layout=False)
        if changed:
            self.virtual_size_given()
        return resized

    def virtual_size_given(self) -> None:
        """Called after a layout gave the widget a new virtual size (the watcher does not run then)."""


def take_back_notice(app: App, notification: Notification) -> bool:
    """Take ``notification`` down if ``app`` still shows it; whether it did. O(notices shown)."""
    if notification in app._notifications:
        app._unnotify(notification)
        return True
    return False
