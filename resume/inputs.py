"""What the command line checks in the user's input before it acts on it.

Each check either returns the value or raises ``InputError`` with ONE line
that names the input, says what is wrong and what to do. Nothing here writes
anything: a store file is inspected read-only, so that a file the command
refuses is left byte for byte as it was.

* numbers from the command line: ports, seconds, counts, seqs (argparse types);
* a store path for ``consume`` (``check_store``): its folder must exist; it
  must be a new path, an empty file, or an SQLite file holding only this
  project's two tables with their columns;
* a publisher log for ``serve`` (``read_log``): ASCII lines ``SEQ DELTA``,
  seqs consecutive in 0..2147483647, deltas in -1000..1000 (SPEC.md).
"""

import argparse
import math
import os
import pathlib
import re
import sqlite3
import urllib.parse

from resume.testing.model import DELTA_MAX, DELTA_MIN, SEQ_MAX, SQLITE_HEADER, table_columns  # SPEC.md's

# The store's schema as SPEC.md step 2 fixes it: table -> its columns.
STORE_TABLES = table_columns()
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)")


class InputError(Exception):
    """The user's input cannot be used; the message is the one line to print."""


# ------------------------------------------------------------ argparse types


def _integer(text, what):
    if not _NUMBER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}")
    return int(text)


def port(text):
    """A TCP port to connect to: 1..65535."""
    value = _integer(text, "a port")
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not in 1..65535")
    return value


def listen_port(text):
    """A TCP port to listen on: 1..65535, or 0 for any free port."""
    value = _integer(text, "a port")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not in 0..65535 (0: any free port)")
    return value


def seconds(text):
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} seconds: give a number above 0")
    return value


def count(text):
    """A number of events: 0 or more."""
    value = _integer(text, "a count")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: a count cannot be negative")
    return value


def positive(text):
    """A number of sessions: 1 or more."""
    value = _integer(text, "a count")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more")
    return value


def seq(text):
    """An event's seq: 0..2147483647 (SPEC.md)."""
    value = _integer(text, "a seq")
    if not 0 <= value <= SEQ_MAX:
        raise argparse.ArgumentTypeError(f"seq {value} is not in 0..{SEQ_MAX}")
    return value


def integer(text):
    """Any whole number (a seed)."""
    return _integer(text, "a seed")


# ------------------------------------------------------------ the store


def check_store(path):
    """Refuse a store path ``consume`` must not use; return it as a Path.

    Accepted: a path that does not exist yet in an existing folder (the
    implementation creates the store), an empty file, or an SQLite file
    whose tables are exactly this project's (a store from an earlier run).
    """
    path = pathlib.Path(path)
    folder = path.parent.resolve() if str(path.parent) else pathlib.Path.cwd()
    if path.is_dir():
        raise InputError(f"store {path} is a folder: give a file path (a new name creates the store)")
    if not folder.is_dir():
        raise InputError(f"store {path}: the folder {folder} does not exist; create it first "
                         "(a store is never created in a missing folder)")
    if not path.exists():
        if not os.access(folder, os.W_OK):
            raise InputError(f"store {path}: cannot create a file in {folder}; choose a folder you can write to")
        return path
    if not path.is_file():
        raise InputError(f"store {path} is not a regular file: give an SQLite file or a new path")
    try:
        with open(path, "rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as error:
        raise InputError(f"store {path}: cannot read it ({error.strerror}); check its permissions") from None
    if not header:
        return path  # an empty file: SQLite takes it as an empty database
    if header != SQLITE_HEADER:
        raise InputError(f"store {path} is not an SQLite file: give a new path (the store is "
                         "created there) or a store from an earlier run")
    tables = _tables(path)
    foreign = sorted(set(tables) - set(STORE_TABLES))
    if foreign:
        raise InputError(f"store {path} holds other tables ({', '.join(foreign)}): it is not a "
                         "resume store and is left alone; give a new path")
    for table, columns in tables.items():
        if columns != STORE_TABLES[table]:
            raise InputError(f"store {path}: its table {table} has the columns "
                             f"{', '.join(sorted(columns))}, not {', '.join(sorted(STORE_TABLES[table]))}; "
                             "it is not a resume store: give a new path")
    return path


def _tables(path):
    """``{table: {columns}}`` of an SQLite file, read through a read-only connection."""
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            names = [row[0] for row in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
            return {name: {row[1] for row in con.execute(f'PRAGMA table_info("{name}")')}
                    for name in names}
        finally:
            con.close()
    except sqlite3.Error as error:
        if getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY:
            # A hot journal: a writer died mid-commit, and only a connection that
            # may write can roll it back. That is open_store's job (SQLite's own
            # recovery, the lab's takeover), so the tables are not checked here.
            return {}
        raise InputError(f"store {path} cannot be read as SQLite ({error}); give a new path") from None


# ------------------------------------------------------------ the publisher's log


def read_log(path):
    """The ``(seq, delta)`` events of a log file, checked line by line."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise InputError(f"log {path} is a folder: give a file of 'SEQ DELTA' lines")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"log {path} not found: give a file of 'SEQ DELTA' lines") from None
    except OSError as error:
        raise InputError(f"log {path}: cannot read it ({error.strerror})") from None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise InputError(f"log {path} line {line}: byte {error.start} is not ASCII; a log holds "
                         "only ASCII 'SEQ DELTA' lines") from None
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or not all(_NUMBER.fullmatch(f) for f in fields):
            raise InputError(f"log {path} line {number}: expected 'SEQ DELTA' (two whole numbers), "
                             f"got {line.strip()[:40]!r}")
        seq_, delta = map(int, fields)
        if not 0 <= seq_ <= SEQ_MAX:
            raise InputError(f"log {path} line {number}: seq {seq_} is not in 0..{SEQ_MAX}")
        if not DELTA_MIN <= delta <= DELTA_MAX:
            raise InputError(f"log {path} line {number}: delta {delta} is not in "
                             f"{DELTA_MIN}..{DELTA_MAX} (SPEC.md)")
        if events and seq_ != events[-1][0] + 1:
            raise InputError(f"log {path} line {number}: seq {seq_} after {events[-1][0]}: "
                             "the seqs must be consecutive")
        events.append((seq_, delta))
    if not events:
        raise InputError(f"log {path} holds no 'SEQ DELTA' line: give at least one event")
    return events
