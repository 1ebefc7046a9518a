"""The sensor that waits for links to expire."""

__all__ = ["links"]
