"""``make e2e``: the provider in a real CeleryExecutor deployment, checked end to end and in a browser.

Everything runs on 127.0.0.1, on free ports, under a fresh temp dir (0700), and every process is started
in its own process group and ended by group at the end, whatever happened (SIGTERM, then SIGKILL
after 45 s); the run fails if a port it used is still listening afterwards.

Deployment (``services.py``, ``deployment.py``):
  - PostgreSQL 15: a private cluster (``initdb`` + ``pg_ctl`` as the unprivileged ``postgres`` user when
    run as root), in a temp dir of its own that this user owns, its commands run from there: the
    checkout and the run's temp dir may be in 0700 directories it cannot enter; its log is copied to
    ``e2e-output/logs/`` at the end;
  - Redis without persistence (no RDB, no AOF), the Celery broker;
  - Airflow 3.3.2 on CeleryExecutor: api-server, scheduler, dag-processor, two triggerers (the second
    joins during the campaign) and two Celery workers, with ``dags_examples/`` as the dags folder.
    Every DAG is paused at creation; the script unpauses each when its scenario starts;
  - the Linkstats emulator, with rate limits when its ``--help`` lists ``--rate-limit`` (1,800 requests
    a minute: a real install's one-minute window, which the client's limiter paces by, with 30x its
    budget, so the cleanup's 2,000 deletes take about a minute and a half, not 33);
  - a recording pass-through proxy (``recorder.py``) between Airflow's connections and the emulator:
    it counts every answer by endpoint and status. The emulator's stats route gives statuses too
    from the rate-limited version on; the cleanup check then reads the emulator's and requires the
    proxy to agree, and falls back on the proxy's with an older emulator.

Runs (``scenarios.py``, ``handover.py``, through Airflow's REST API). The 2,000 old expired links
and 2,000 live ones as old are seeded first (the emulator's admin API), the emulator's clock set
40 days back and then forward to now: its rate-limit windows run on its clock, so it is never
moved back once other clients use it (a window would then last the jump's length).
  1. ``linkstats_cleanup_expired`` on the 2,000 links created 40 days ago and expired, beside 2,000
     live ones as old: unpaused, the @daily DAG gets its scheduled run for the last day from the
     scheduler (a dry run ``plan``, then the streaming ``delete_old``). While ``delete_old``
     is deleting, the Celery worker running it is killed with SIGKILL (its process group and
     its task runner's). The scheduler notices the missing heartbeat (20 s instead of 300 s), the
     task is retried on the other worker (it walks the listing again), and the check requires: run
     successful, every old link answered DELETE 200 exactly once, none left, every live link kept
     and sent no DELETE. First, so that the expiry watcher, which starts
     next, never sees these links;
  2. ``linkstats_campaign_launch`` with a triggerer kill (``handover.py``): ``linkstats_cleanup_on_expiry``
     is unpaused, so its AssetWatcher runs in triggerer-1; the campaign's ``wait_for_expiry``
     defers to it too (both read from the metadata database: ``trigger.triggerer_id`` -> ``job``).
     triggerer-2 starts; 6 links expire and the watcher reports them; triggerer-1 is SIGKILLed
     (its process group and its descendants'); triggerer-2 takes both triggers over
     (``[triggerer] job_heartbeat_sec`` 1, ``triggerer_health_check_threshold`` 8 s instead of 30);
     4 more links expire and must be reported by triggerer-2. ``default_pool`` has 0 slots from the
     first expiry until then, so the links triggerer-1 reported are still there for the new watcher
     to repeat if it forgot them. Also: nothing the run started listens beyond 127.0.0.1 (workers
     and triggerers run with ``--skip-serve-logs``: Airflow's log server binds every interface).
     Checks: each of the 10 links
     in exactly one asset event, deleted once (DELETE 200, no 404), none left; the runs and the
     wait (one try) successful. The watcher is then dropped (DAG paused, its file parsed again)
     before simulated visitors click the campaign links through the emulator's redirect until
     they expire and the emulator's clock moves past the A/B link's date.

UI checks (``ui.py``): Playwright from PyPI drives Debian's ``chromium-headless-shell``: sign in,
both connection forms (labels, every extra of ``connection.EXTRA_FIELDS`` with default and
description), a connection added through the form passes Test, and the campaign's ``create_links``
task shows the "Short URL" extra link. Screenshots go to ``e2e-output/``.

Output: tables of processes (pid, process group, port), runs (state, duration), the triggerers (job,
what each held at the kill, last heartbeat, kill and takeover times), the event-driven cleanup per
link (when it expired, which asset event and triggerer reported it, its DELETE answers) and requests
(by endpoint: what the emulator saw, and the answers Airflow's tasks got by status). Logs of every
process stay in ``e2e-output/logs/``. ``LINKSTATS_E2E_SKIP_UI=1`` skips the browser part.
"""
