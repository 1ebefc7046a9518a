"""Waiting for links to expire: one plan for the sensor (poke, reschedule, deferrable), its
trigger, the shared poller and the expiry watcher (see docs/waiting.md).

- ``plan``: the steps (page walker, reads, the Expired listing) and the one stepper (``drive``,
  ``adrive``) that runs them;
- ``watch``: one wait (``Watch``) and the rounds that answer many at once (``Poll``);
- ``feed``: the expiry watcher's walk and memory;
- ``version``: the phpShort generation, where it matters.
"""
