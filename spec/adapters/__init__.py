"""Schedulers that live outside this Python process, reached through an adapter protocol."""
