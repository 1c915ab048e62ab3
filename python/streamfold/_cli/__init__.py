"""The ``streamfold`` command line: inspect a stream, fold it, time it, and the demo."""
