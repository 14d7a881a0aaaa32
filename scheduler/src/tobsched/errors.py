"""Errors that come from outside: bad files and arguments. The CLI maps them to exit code 2."""


class InputError(Exception):
    """Bad input; the message names the offending item."""
