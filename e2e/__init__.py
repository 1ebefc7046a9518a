"""``make e2e``: the provider in a real CeleryExecutor deployment, checked end to end and in a browser.

Everything runs on 127.0.0.1, on free ports, under a fresh temp dir (0700), and every process is started
in its own process group and ended by group at the end, whatever happened (SIGTERM, then SIGKILL
after 20 s); the run fails if a port it used is still listening afterwards.

Deployment (``services.py``, ``deployment.py``):
  - PostgreSQL 15: a private cluster (``initdb`` + ``pg_ctl`` as the unprivileged ``postgres`` user when
    run as root), in a temp dir of its own that this user owns, its commands run from there: the
    checkout and the run's temp dir may be in 0700 directories it cannot enter; its log is copied to
    ``e2e-output/logs/`` at the end;
  - Redis without persistence (no RDB, no AOF), the Celery broker;
  - Airflow 3.3.2 on CeleryExecutor: api-server, scheduler, dag-processor, triggerer and two Celery
    workers, with ``dags_examples/`` as the dags folder;
  - the Linkstats emulator, with rate limits when its ``--help`` lists ``--rate-limit`` (720 requests
    a minute: a real install's one-minute window, which the client's limiter paces by, with 12x its
    budget, so 500 deletes take ~45 s, not 8 min);
  - a recording pass-through proxy (``recorder.py``) between Airflow's connections and the emulator:
    it counts every answer by endpoint and status. The emulator's stats route gives statuses too
    from the rate-limited version on; the cleanup check then reads the emulator's and requires the
    proxy to agree, and falls back on the proxy's with an older emulator.

Runs (``scenarios.py``, through Airflow's REST API). The 500 old links are seeded first, the
emulator's clock set 40 days back and then forward to now: its rate-limit windows run on its clock,
so it is never moved back once other clients use it (a window would then last the jump's length).
  1. ``linkstats_campaign_launch``: simulated visitors click the campaign links through the
     emulator's redirect until they expire; the emulator's clock moves past the A/B link's date;
  2. ``linkstats_cleanup_expired`` on 500 links created 40 days ago and expired: while its
     ``delete_old`` task is deleting, the Celery worker running it is killed with SIGKILL (its
     process group and its task runner's). The scheduler notices the missing heartbeat (20 s
     instead of 300 s), the task is retried on the other worker, and the check requires: run
     successful, every link answered DELETE 200 exactly once, none left.

UI checks (``ui.py``): Playwright from PyPI drives Debian's ``chromium-headless-shell``: sign in,
both connection forms (labels, every extra of ``connection.EXTRA_FIELDS`` with default and
description), a connection added through the form passes Test, and the campaign's ``create_links``
task shows the "Short URL" extra link. Screenshots go to ``e2e-output/``.

Output: tables of processes (pid, process group, port), runs (state, duration) and requests (by
endpoint: what the emulator saw, and the answers Airflow's tasks got by status). Logs of every
process stay in ``e2e-output/logs/``. ``LINKSTATS_E2E_SKIP_UI=1`` skips the browser part.
"""
