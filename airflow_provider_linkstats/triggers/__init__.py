"""The triggers: a deferred wait for links to expire, and expiry events for asset watchers."""

__all__ = ["links"]
