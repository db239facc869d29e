"""fencepost's terminal UI: step through a scheduler's logical time."""
