"""``headrace user create|delete|list``: SCRAM users (AlterUserScramCredentials
51 / DescribeUserScramCredentials 50 through confluent-kafka's AdminClient;
docs/security.md "SCRAM credentials").

The password never travels: the client salts it (PBKDF2 with the chosen
iterations) and the broker keeps only the salt, StoredKey, ServerKey and
iteration count. ``list`` shows users with their mechanisms and iterations
(``--format json``: ``{"users": [{"user", "mechanisms": [{"mechanism",
"iterations"}]}]}``).
"""
from __future__ import annotations

import argparse
import os
import sys

from headrace.cli.common import CliError, add_client_flags, admin_for
from headrace.cli.output import add_format_flag, emit, print_rows

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
PASSWORD_ENV = "HEADRACE_USER_PASSWORD"


def add_user_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("user", help="create, delete and list SCRAM users")
    usub = p.add_subparsers(dest="user_command", metavar="ACTION")
    usub.required = True

    c = usub.add_parser("create", help="create a user or change its password")
    c.add_argument("name", metavar="USER")
    pw = c.add_mutually_exclusive_group()
    pw.add_argument("--password", metavar="PW",
                    help=f"the password (else ${PASSWORD_ENV}, else --password-stdin)")
    pw.add_argument("--password-stdin", action="store_true",
                    help="read the password from the first line of stdin")
    c.add_argument("--mechanism", action="append", choices=MECHANISMS, metavar="MECH",
                   help="SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default both)")
    c.add_argument("--iterations", type=int, default=4096, metavar="N",
                   help="PBKDF2 iterations, 4096..16384 (default 4096)")
    c.set_defaults(func=_create)

    d = usub.add_parser("delete", help="delete a user's SCRAM credentials")
    d.add_argument("name", metavar="USER")
    d.add_argument("--mechanism", action="append", choices=MECHANISMS, metavar="MECH",
                   help="only this mechanism (repeatable; default every one the user has)")
    d.set_defaults(func=_delete)

    ls = usub.add_parser("list", help="users with their SCRAM mechanisms and iterations")
    ls.add_argument("names", nargs="*", metavar="USER", help="only these users")
    add_format_flag(ls)
    ls.set_defaults(func=_list)

    for sp in (c, d, ls):
        add_client_flags(sp)


def _mechanism(name: str):
    from confluent_kafka.admin import ScramMechanism

    return ScramMechanism.SCRAM_SHA_256 if name == "SCRAM-SHA-256" else ScramMechanism.SCRAM_SHA_512


def _mechanism_name(m) -> str:
    return str(getattr(m, "name", m)).replace("_", "-")


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        pw = args.password
    elif args.password_stdin:
        pw = sys.stdin.readline().rstrip("\n")
    else:
        pw = os.environ.get(PASSWORD_ENV, "")
    if not pw:
        raise CliError(f"no password: give --password, --password-stdin or ${PASSWORD_ENV}")
    return pw


def _wait_each(futures: dict, timeout: float) -> None:
    errors = []
    for user, f in futures.items():
        try:
            f.result(timeout=timeout)
        except Exception as e:  # noqa: BLE001 - reported per user
            errors.append(f"{user}: {_error_text(e)}")
    if errors:
        raise CliError("; ".join(errors))


def _error_text(e: Exception) -> str:
    err = e.args[0] if e.args else None
    if hasattr(err, "str") and hasattr(err, "name"):
        return f"{err.name()}: {err.str() or err.name()}"
    if isinstance(e, TimeoutError):  # concurrent.futures: no text of its own
        return "no answer from the broker in time"
    from headrace.admin import describe_error

    return describe_error(e)


def _create(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialUpsertion

    password = _password(args).encode()
    if not 4096 <= args.iterations <= 16384:
        raise CliError(f"--iterations must be in 4096..16384, got {args.iterations}")
    admin = admin_for(args)
    upserts = [UserScramCredentialUpsertion(args.name,
                                            ScramCredentialInfo(_mechanism(m), args.iterations),
                                            password)
               for m in (args.mechanism or MECHANISMS)]
    _wait_each(admin.client.alter_user_scram_credentials(upserts, request_timeout=args.timeout),
               args.timeout)
    print(f"user {args.name}: {', '.join(args.mechanism or MECHANISMS)} "
          f"({args.iterations} iterations)")
    return 0


def _describe(admin, names: list[str] | None, timeout: float) -> list[dict]:
    """[{"user", "mechanisms": [{"mechanism", "iterations"}]}] sorted by user."""
    if names:
        futures = admin.client.describe_user_scram_credentials(names, request_timeout=timeout)
        results = {}
        for user, f in futures.items():
            try:
                results[user] = f.result(timeout=timeout)
            except Exception as e:  # noqa: BLE001
                raise CliError(f"{user}: {_error_text(e)}") from None
    else:
        try:
            results = admin.client.describe_user_scram_credentials(
                request_timeout=timeout).result(timeout=timeout)
        except Exception as e:  # noqa: BLE001
            raise CliError(_error_text(e)) from None
    out = []
    for user, desc in sorted(results.items()):
        mechs = [{"mechanism": _mechanism_name(i.mechanism), "iterations": i.iterations}
                 for i in desc.scram_credential_infos]
        out.append({"user": user, "mechanisms": sorted(mechs, key=lambda m: m["mechanism"])})
    return out


def _delete(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import UserScramCredentialDeletion

    admin = admin_for(args)
    mechs = args.mechanism
    if not mechs:
        described = _describe(admin, [args.name], args.timeout)
        mechs = [m["mechanism"] for d in described for m in d["mechanisms"]]
    deletions = [UserScramCredentialDeletion(args.name, _mechanism(m)) for m in mechs]
    _wait_each(admin.client.alter_user_scram_credentials(deletions, request_timeout=args.timeout),
               args.timeout)
    print(f"user {args.name}: deleted {', '.join(mechs)}")
    return 0


def _list(args: argparse.Namespace) -> int:
    users = _describe(admin_for(args), args.names or None, args.timeout)
    return emit(args, {"users": users}, lambda: print_rows(
        ["USER", "MECHANISM", "ITERATIONS"],
        [[u["user"], m["mechanism"], m["iterations"]] for u in users for m in u["mechanisms"]]))
