"""``sf.stream`` / ``sf.astream``: the request made for the caller (with httpx, httpx2 or the
native client), its retry policy, and the streams read from it."""
