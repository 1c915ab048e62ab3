"""Resumable streams: the cursor that knows where a stream was, and the drivers that reconnect
and skip what was already delivered."""
