"""Reading other libraries' responses: which client a response belongs to, the adapters that turn
its body into byte chunks, and the async-library helpers. (Telling a failed connection from a
failed program is ``streamfold._failures``, below the engine, which needs it too.)"""
