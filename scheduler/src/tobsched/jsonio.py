"""JSON reading and atomic writing, shared by the solver side and the verifier."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from tobsched.errors import InputError


def read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def write_text_atomic(path: str, text: str) -> None:
    """Writes via a temporary file in the same directory, so a failure leaves nothing behind."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tob-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: str, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=1) + "\n")
