"""The long jobs' drivers, one module per job (reading pages, sending requests on a bounded pool,
writing sinks, telling the progress), over the plans in ``client/``. Imported when a task runs."""
