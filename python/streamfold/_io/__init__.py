"""Reading other libraries' responses: which client a response belongs to, the adapters that turn
its body into byte chunks, and telling a failed connection from a failed program."""
