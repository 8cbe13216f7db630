"""``ms4map users``: the app's local users (names, roles, hashed passwords).

::

    ms4map users add jsmith --role smo            # asks for the password twice
    echo "$PW" | ms4map users add guest --role viewer --password-stdin
    ms4map users list
    ms4map users remove guest
    ms4map users unlock jsmith                    # after too many login attempts

The file is ``users.toml`` in the app's data folder (``MS4MAP_DATA_DIR``, default
``~/.local/share/ms4map``), or ``$MS4MAP_USERS_FILE``, or ``--users-file``.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from ..core.errors import EXIT_USAGE
from . import Command

__all__ = ["COMMANDS", "run"]


ABOUT = """the app's users: add, list, remove, unlock (roles smo and viewer)

Manage the map app's local users. With a users file the app asks for a login; the smo role
records inspections and cases, the viewer role reads only. Passwords are stored as Argon2id
hashes, never in clear.
"""


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--users-file",
        metavar="FILE.toml",
        help="users file (default: $MS4MAP_USERS_FILE, else users.toml in MS4MAP_DATA_DIR)",
    )
    acts = p.add_subparsers(dest="users_action", metavar="ACTION", parser_class=type(p))
    a = acts.add_parser("add", help="add a user (asks for the password)")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--role", required=True, choices=("smo", "viewer"))
    a.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input (scripts)",
    )
    a.add_argument("--replace", action="store_true", help="change an existing user")
    acts.add_parser("list", help="the users and their roles (never the hashes)")
    a = acts.add_parser("remove", help="remove a user (their records keep their name)")
    a.add_argument("name", metavar="NAME")
    a = acts.add_parser(
        "unlock",
        help="let a user log in again now, after too many login attempts (run on the server)",
    )
    a.add_argument("name", metavar="NAME")


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        line = sys.stdin.readline()
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        print(
            "ms4map users add: no terminal to ask the password on. Fix: give "
            "--password-stdin and pipe the password in.",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_USAGE)
    from ..records import users

    first = users.check_password(  # said now, before asking again
        getpass.getpass(f"Password for {args.name}: "), name=args.name
    )
    again = getpass.getpass("Same password again: ")
    if first != again:
        print("ms4map users add: the two passwords differ; nothing written.", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return first


def run(args: argparse.Namespace) -> int:
    from ..records import users

    path = args.users_file
    where = path or users.users_file_path()
    if args.users_action == "add":
        users.check_name(args.name)
        first = not any(u.can_log_in for u in users.list_users(path))
        u = users.add_user(args.name, args.role, _password(args), path=path, replace=args.replace)
        print(f"User {u.name} ({u.role}) written to {where}.")
        if first:
            print(
                "The app now has users: every page asks for a login (viewers read, the SMO "
                "records, uploads and opens files). Reload the app's page to log in."
            )
        return 0
    if args.users_action == "remove":
        users.remove_user(args.name, path=path)
        print(f"User {args.name} removed from {where}.")
        return 0
    if args.users_action == "unlock":
        from ..records import logins

        users.check_name(args.name)
        count = logins.unlock(args.name, users_file=path)
        print(
            f"User {args.name} can log in again ({count} recent login attempt(s) forgotten, "
            f"{logins.attempts_path(path)})."
        )
        return 0
    if args.users_action == "list":
        rows = users.list_users(path)
        if not rows:
            print(f"No users in {where}. Add one: ms4map users add NAME --role smo")
            return 0
        width = max(len(u.name) for u in rows)
        for u in rows:
            note = "" if u.can_log_in else "  (no password: cannot log in)"
            print(f"{u.name:<{width}}  {u.role}{note}")
        return 0
    print("ms4map users: give an action: add, list, remove or unlock.", file=sys.stderr)
    return EXIT_USAGE


COMMANDS = (Command("users", ABOUT, run, _options),)
