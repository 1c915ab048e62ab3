"""The read functions over any source of bytes (an iterable, or an HTTP client's response):
``sf.events``, ``sf.fold``, their async twins, the JSON-body forms and the framers."""
