"""The engine, with no I/O: frames to events through a provider (the pipeline), events to a
``Message`` (the folder), and the one driver every fold runs on."""
