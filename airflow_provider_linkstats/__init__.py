"""Apache Airflow provider for the Linkstats link-shortening and web-analytics services.

The public API is the tree of ``__all__`` lists from here down: this package's names its public
packages, each package's names its public modules (or, for ``client`` and ``emulator``, the names
it exports), each module's its public names. Everything else is internal. ``docs/reference.md``
is generated from this tree (``python tools/public_api.py``).
"""

__version__ = "0.1.0"

__all__ = ["hooks", "operators", "sensors", "triggers", "client", "emulator"]
