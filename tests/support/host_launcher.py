"""Forks the processes of the tests' "fresh processes" (tests/support/fresh_process.py), as Airflow
starts task processes: from one process that has imported the provider (and so Airflow) once.

    python -m tests.support.host_launcher --serve

reads one JSON list of jobs a line from its standard input, each job ``{"module", "argv", "env",
"stdout", "stderr"}``: every job of a line is forked at once and runs ``python -m MODULE ARGV...``
(or, given ``"code"`` instead of ``"module"``, ``python -c CODE``) in a process of its own, with
exactly the environment ``env`` and its output in the two files. Once all have ended it prints
one JSON line, their exit codes in the jobs' order, and reads the next line.

Why: each host or task process importing Airflow itself cost about 8 s of CPU (3 to 8 of them a
shared-store test). A forked child shares nothing learned with its siblings: the launcher only
imports (no connection, no client, no thread), and everything the processes read from the
environment (connections, ``[linkstats]`` settings, the hostname callable) is read when used,
after the child has taken its own environment.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

PRELOADED = (  # what every host, triggerer and worker of the tests imports first
    "airflow_provider_linkstats.hooks.linkstats",
    "airflow_provider_linkstats.triggers.links",
    "airflow_provider_linkstats.triggers.poller",
    "limits.storage",
    "limits.aio.storage",
    "redis",
    "redis.asyncio",
)


def _run_child(job: dict) -> int:
    os.environ.clear()
    os.environ.update(job["env"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the launcher's own input is not the child's
    for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    sys.argv = [job.get("module", "-c"), *job.get("argv", ())]
    try:
        if "code" in job:
            exec(compile(job["code"], "<string>", "exec"), {"__name__": "__main__"})
        else:
            runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1


def _fork_all(jobs: list[dict]) -> list[int]:
    """Fork every job at once; their exit codes once all ended."""
    sys.stdout.flush()
    sys.stderr.flush()
    children = []
    for job in jobs:
        pid = os.fork()
        if pid == 0:  # the child: never returns into the launcher's loop
            code = 1
            try:
                code = _run_child(job)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]


def main(argv: list[str]) -> int:
    import importlib

    if argv != ["--serve"]:
        print(__doc__, file=sys.stderr)
        return 2
    for name in PRELOADED:
        importlib.import_module(name)
    for line in sys.stdin:
        print(json.dumps(_fork_all(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
