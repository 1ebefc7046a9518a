"""``linkstats-emulator``: both Linkstats services on one port, or one port each.

    linkstats-emulator --port 8765 --api-key KEY [--analytics-port 8766] [--state-file demo.json]
                       [--rate-limit 60 --rate-limit-window 60] [--api-version 49] [--analytics-version 31]

The key may come from LINKSTATS_EMULATOR_API_KEY instead of the command line (which other local
users can see in the process list).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

KEY_ENV = "LINKSTATS_EMULATOR_API_KEY"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="linkstats-emulator", description="Local emulator of the Linkstats services.")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8765, help="port of the links service, and of both by default (default 8765)"
    )
    parser.add_argument(
        "--analytics-port", type=int, default=None, help="serve the analytics service on its own port instead"
    )
    parser.add_argument(
        "--api-key", action="append", default=None, help=f"accepted API key, repeatable (default: ${KEY_ENV})"
    )
    parser.add_argument("--state-file", default=None, help="JSON file that keeps the records across restarts")
    parser.add_argument("--timezone", default="UTC", help="service time zone of expiration dates (default UTC)")
    parser.add_argument(
        "--default-domain", type=int, default=None,
        help="default domain of the accounts (default: none, as a fresh real account; 1 is the global domain)",
    )  # fmt: skip
    parser.add_argument("--base-url", default=None, help="public base URL used in short_url (default: the links URL)")
    parser.add_argument(
        "--rate-limit", type=int, default=None,
        help="requests per client IP per window, as a real install (60); off when not given",
    )  # fmt: skip
    parser.add_argument("--rate-limit-window", type=float, default=60.0, help="window in seconds (default 60)")
    parser.add_argument("--key-rate-limit", type=int, default=None, help="per API key (default: twice --rate-limit)")
    parser.add_argument(
        "--analytics-rate-limit", type=int, default=None, help="analytics service (default: --rate-limit)"
    )
    # The shell default is the current generation; Emulator() in Python keeps 44/3 for the test suite.
    parser.add_argument(
        "--api-version", default="49", choices=["44", "49"],
        help="phpShort generation: 44 (v44-45) or 49 (v46-49, the default)",
    )  # fmt: skip
    parser.add_argument(
        "--analytics-version", default="31", choices=["3", "31"],
        help="phpAnalytics generation: 3 (3.0-3.6) or 31 (3.7 and later, the default)",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"],
        help="how much the server logs (default warning)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not args.api_key:
        from_env = os.environ.get(KEY_ENV, "")
        args.api_key = [from_env] if from_env else None
    if not args.api_key:
        parser.error(f"give an API key with --api-key or ${KEY_ENV}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from airflow_provider_linkstats.emulator.server import Emulator

    emulator = Emulator(
        api_keys=args.api_key,
        host=args.host,
        port=args.port,
        analytics_port=args.analytics_port,
        state_file=args.state_file,
        timezone=args.timezone,
        base_url=args.base_url,
        log_level=args.log_level,
        rate_limit=args.rate_limit,
        rate_limit_window=args.rate_limit_window,
        key_rate_limit=args.key_rate_limit,
        analytics_rate_limit=args.analytics_rate_limit,
        links_version=args.api_version,
        analytics_version=args.analytics_version,
        default_domain=args.default_domain,
    )

    def ready(emu: Emulator) -> None:
        print(
            f"Linkstats emulator: links {emu.url}, analytics {emu.analytics_url} (phpShort {emu.links_version},"
            f" phpAnalytics {emu.analytics_version}; Ctrl+C to stop)",
            flush=True,
        )

    emulator.run(on_ready=ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
