"""Exceptions and the CLI exit codes they map to.

Every error a user can cause is one of these, carries a message that names the
layer, the feature and the fix, and maps to one exit code of the ``ms4map``
command (see :data:`EXIT_CODES`).
"""

from __future__ import annotations

__all__ = [
    "EXIT_OK",
    "EXIT_WARNINGS",
    "EXIT_DATA_ERROR",
    "EXIT_CANNOT_OPEN",
    "EXIT_USAGE",
    "Ms4mapError",
    "InputOpenError",
    "OutputError",
    "DataError",
    "UsageError",
    "ValidationError",
]

EXIT_OK = 0
EXIT_WARNINGS = 1  # `validate` only: the data is usable but has warnings
EXIT_DATA_ERROR = 2
EXIT_CANNOT_OPEN = 3
EXIT_USAGE = 4


class Ms4mapError(Exception):
    """Base class of every error ms4map raises on purpose."""

    exit_code = EXIT_DATA_ERROR


class InputOpenError(Ms4mapError, OSError):
    """A file, layer or archive could not be opened (missing, unreadable, unsafe)."""

    exit_code = EXIT_CANNOT_OPEN


class OutputError(Ms4mapError, OSError):
    """An output could not be written (disk full, no permission, a network share gone);
    an earlier output at that path is left as it was."""

    exit_code = EXIT_CANNOT_OPEN


class DataError(Ms4mapError, ValueError):
    """The input opened but its content cannot be used as given."""

    exit_code = EXIT_DATA_ERROR


class UsageError(Ms4mapError, ValueError):
    """An option or argument is malformed (unknown role, bad ``--field`` syntax, ...)."""

    exit_code = EXIT_USAGE


class ValidationError(DataError):
    """Validation found errors; ``report`` holds every problem found, not just the first.

    Parameters
    ----------
    report : ms4map.core.qa.QAReport
        The full report (errors and warnings).
    """

    def __init__(self, report: object, message: str | None = None) -> None:
        self.report = report
        if message is None:
            errors = getattr(report, "errors", [])
            lines = [f"{len(errors)} data error(s) stop the run:"]
            lines += [f"  - {issue.one_line()}" for issue in errors[:50]]
            if len(errors) > 50:
                lines.append(f"  ... and {len(errors) - 50} more (see the QA report)")
            message = "\n".join(lines)
        super().__init__(message)
