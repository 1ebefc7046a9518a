"""Waiting for links to expire: one plan for the sensor (poke, reschedule, deferrable), its
trigger, the shared poller and the expiry watcher (see docs/waiting.md).

- ``plan``: the steps (page walker, reads, the Expired listing) and the clocks (an end is the
  service's: ``service_time``, ``worker_time``); the stepper that runs them (``drive``,
  ``adrive``) is ``client.protocol``'s, re-exported here;
- ``watch``: one wait (``Watch``) and the rounds that answer many at once (``Poll``), with the
  one rule for when ends are confirmed (``Poll.confirm_at``);
- ``feed``: the expiry watcher's walk and memory.
"""
