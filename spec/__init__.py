"""fencepost's executable reference specification of lease-based task scheduling."""
