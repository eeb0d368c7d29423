"""``headrace registry subject|schema|config|mode ...``: the built-in schema
registry (docs/schema-registry.md) from the command line, as ``rpk
registry`` does it, over the registry's REST API on a broker's HTTP
listener.

``--url`` (or $HEADRACE_REGISTRY_URL; default http://127.0.0.1:9644, the
broker's default ``headrace.http.listen``); ``--user USER`` with the
password in $HEADRACE_REGISTRY_PASSWORD for a broker with a SASL listener;
``--ca FILE`` to trust an HTTPS listener's certificate. A refusal is one
line with the registry's error code, e.g. ``error 40401: Subject 'x' not
found.``
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from headrace.cli.common import CliError
from headrace.cli.output import add_format_flag, emit, print_rows

URL_ENV = "HEADRACE_REGISTRY_URL"
PASSWORD_ENV = "HEADRACE_REGISTRY_PASSWORD"
DEFAULT_URL = "http://127.0.0.1:9644"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TYPES = ("AVRO", "JSON", "PROTOBUF")


def add_registry_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("registry", help="subjects, schemas and compatibility of the schema "
                                        "registry")
    rsub = p.add_subparsers(dest="registry_command", metavar="GROUP")
    rsub.required = True

    subject = rsub.add_parser("subject", help="list and delete subjects")
    ssub = subject.add_subparsers(dest="subject_command", metavar="ACTION")
    ssub.required = True
    ls = ssub.add_parser("list", help="the subjects")
    ls.add_argument("--deleted", action="store_true", help="with soft-deleted subjects")
    ls.set_defaults(func=_subject_list)
    d = ssub.add_parser("delete", help="delete a subject (soft; --permanent after that)")
    d.add_argument("subject", metavar="SUBJECT")
    d.add_argument("--version", metavar="V", help="only this version (a number or latest)")
    d.add_argument("--permanent", action="store_true", help="hard delete (after a soft one)")
    d.set_defaults(func=_subject_delete)

    schema = rsub.add_parser("schema", help="get, register and check schemas")
    ssub = schema.add_subparsers(dest="schema_command", metavar="ACTION")
    ssub.required = True
    g = ssub.add_parser("get", help="a subject's version (default latest) or a schema by id")
    who = g.add_mutually_exclusive_group(required=True)
    who.add_argument("subject", metavar="SUBJECT", nargs="?")
    who.add_argument("--id", type=int, metavar="N", help="the schema with this id")
    g.add_argument("--version", default="latest", metavar="V", help="a number or latest")
    g.add_argument("--deleted", action="store_true", help="soft-deleted versions too")
    g.set_defaults(func=_schema_get)
    r = ssub.add_parser("register", help="register a schema under a subject")
    r.add_argument("subject", metavar="SUBJECT")
    r.add_argument("--schema", required=True, metavar="FILE",
                   help="the schema's file (- for stdin)")
    r.add_argument("--type", choices=TYPES, metavar="TYPE",
                   help="AVRO, JSON or PROTOBUF (default: from the file's extension "
                        ".avsc/.json; else AVRO)")
    r.add_argument("--reference", action="append", metavar="NAME:SUBJECT:VERSION",
                   help="a schema this one references (repeatable)")
    r.set_defaults(func=_schema_register)
    c = ssub.add_parser("check", help="whether a schema is compatible with a subject")
    c.add_argument("subject", metavar="SUBJECT")
    c.add_argument("--schema", required=True, metavar="FILE")
    c.add_argument("--type", choices=TYPES, metavar="TYPE")
    c.add_argument("--version", metavar="V", help="against this version only")
    c.set_defaults(func=_schema_check)

    config = rsub.add_parser("config", help="compatibility levels")
    csub = config.add_subparsers(dest="config_command", metavar="ACTION")
    csub.required = True
    cg = csub.add_parser("get", help="the global level or a subject's")
    cg.add_argument("subject", metavar="SUBJECT", nargs="?")
    cg.set_defaults(func=_config_get)
    cs = csub.add_parser("set", help="set the global level or a subject's")
    cs.add_argument("subject", metavar="SUBJECT", nargs="?")
    cs.add_argument("--level", required=True, metavar="LEVEL",
                    help="NONE, BACKWARD, FORWARD, FULL or one of those _TRANSITIVE")
    cs.set_defaults(func=_config_set)

    mode = rsub.add_parser("mode", help="read-only or read-write")
    msub = mode.add_subparsers(dest="mode_command", metavar="ACTION")
    msub.required = True
    mg = msub.add_parser("get", help="the global mode or a subject's")
    mg.add_argument("subject", metavar="SUBJECT", nargs="?")
    mg.set_defaults(func=_mode_get)
    ms = msub.add_parser("set", help="set the global mode or a subject's")
    ms.add_argument("subject", metavar="SUBJECT", nargs="?")
    ms.add_argument("--mode", required=True, metavar="MODE",
                    help="READWRITE, READONLY, READONLY_OVERRIDE or IMPORT")
    ms.set_defaults(func=_mode_set)

    for sp in (ls, d, g, r, c, cg, cs, mg, ms):
        sp.add_argument("--url", default=os.environ.get(URL_ENV) or DEFAULT_URL,
                        help=f"the registry (a broker's HTTP listener; env {URL_ENV}, "
                             f"default {DEFAULT_URL})")
        sp.add_argument("--user", metavar="USER",
                        help=f"a SASL user of the broker (password in ${PASSWORD_ENV})")
        sp.add_argument("--ca", metavar="FILE", help="CA certificate(s) to trust for https")
        sp.add_argument("--timeout", type=float, default=30.0, metavar="S",
                        help="seconds to wait for an answer (default 30)")
        add_format_flag(sp)


def request(args: argparse.Namespace, method: str, path: str, body=None, **query):
    """The registry's JSON answer; CliError with its error code otherwise."""
    url = args.url.rstrip("/") + path
    query = {k: v for k, v in query.items() if v not in (None, False)}
    if query:
        url += "?" + urllib.parse.urlencode({k: str(v).lower() if isinstance(v, bool) else v
                                             for k, v in query.items()})
    headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
    if args.user:
        token = f"{args.user}:{os.environ.get(PASSWORD_ENV, '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(token).decode()
    data = json.dumps(body).encode() if body is not None else None
    context = ssl.create_default_context(cafile=args.ca) if args.ca else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=args.timeout, context=context) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            doc = json.loads(raw)
            message = f"error {doc['error_code']}: {doc['message']}"
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {e.code}: {raw.decode(errors='replace').strip()[:200]}"
        raise CliError(message) from None
    except (urllib.error.URLError, OSError) as e:
        raise CliError(f"cannot reach the schema registry at {args.url}: "
                       f"{getattr(e, 'reason', e)}") from None
    try:
        return json.loads(raw)
    except ValueError:
        raise CliError(f"{args.url} did not answer JSON: is it a schema registry?") from None


def _q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _subject_list(args) -> int:
    names = request(args, "GET", "/subjects", deleted=args.deleted)
    return emit(args, {"subjects": names}, lambda: [print(n) for n in names])


def _subject_delete(args) -> int:
    if args.version:
        gone = [request(args, "DELETE", f"/subjects/{_q(args.subject)}/versions/"
                                        f"{_q(args.version)}", permanent=args.permanent)]
    else:
        gone = request(args, "DELETE", f"/subjects/{_q(args.subject)}",
                       permanent=args.permanent)
    kind = "permanently deleted" if args.permanent else "deleted"
    return emit(args, {"subject": args.subject, "versions": gone, "permanent": args.permanent},
                lambda: print(f"{args.subject}: {kind} versions "
                              f"{', '.join(str(v) for v in gone)}"))


def _schema_get(args) -> int:
    if args.id is not None:
        doc = request(args, "GET", f"/schemas/ids/{args.id}")
        doc = {"id": args.id, **doc}
    else:
        doc = request(args, "GET", f"/subjects/{_q(args.subject)}/versions/{_q(args.version)}",
                      deleted=args.deleted)

    def table():
        print_rows(["SUBJECT", "VERSION", "ID", "TYPE"],
                   [[doc.get("subject"), doc.get("version"), doc.get("id"),
                     doc.get("schemaType", "AVRO")]])
        print(doc["schema"])
    return emit(args, doc, table)


def _read_schema(args) -> tuple[str, str]:
    try:
        text = sys.stdin.read() if args.schema == "-" else Path(args.schema).read_text()
    except OSError as e:
        raise CliError(f"cannot read {args.schema}: {e.strerror}") from None
    kind = args.type or ("JSON" if args.schema.endswith(".json") else
                         "PROTOBUF" if args.schema.endswith(".proto") else "AVRO")
    return text, kind


def _references(args) -> list[dict]:
    out = []
    for item in args.reference or ():
        name, subject, version = (item.rsplit(":", 2) + ["", ""])[:3]
        if not name or not subject or not version.lstrip("-").isdigit():
            raise CliError(f"--reference {item!r}: expected NAME:SUBJECT:VERSION")
        out.append({"name": name, "subject": subject, "version": int(version)})
    return out


def _schema_register(args) -> int:
    text, kind = _read_schema(args)
    body = {"schema": text, "schemaType": kind}
    refs = _references(args)
    if refs:
        body["references"] = refs
    doc = request(args, "POST", f"/subjects/{_q(args.subject)}/versions", body)
    doc = {"subject": args.subject, **doc}
    return emit(args, doc, lambda: print(f"{args.subject}: id {doc['id']}"
                                         + (f", version {doc['version']}"
                                            if "version" in doc else "")))


def _schema_check(args) -> int:
    text, kind = _read_schema(args)
    path = f"/compatibility/subjects/{_q(args.subject)}/versions"
    if args.version:
        path += f"/{_q(args.version)}"
    doc = request(args, "POST", path, {"schema": text, "schemaType": kind}, verbose=True)
    emit(args, doc, lambda: print("compatible" if doc["is_compatible"] else
                                  "incompatible: " + "; ".join(doc.get("messages") or [])))
    return 0 if doc["is_compatible"] else 1


def _config_get(args) -> int:
    path = "/config" + (f"/{_q(args.subject)}" if args.subject else "")
    doc = request(args, "GET", path, defaultToGlobal=bool(args.subject))
    return emit(args, doc, lambda: print(doc["compatibilityLevel"]))


def _config_set(args) -> int:
    path = "/config" + (f"/{_q(args.subject)}" if args.subject else "")
    doc = request(args, "PUT", path, {"compatibility": args.level.upper()})
    return emit(args, doc, lambda: print(doc["compatibility"]))


def _mode_get(args) -> int:
    path = "/mode" + (f"/{_q(args.subject)}" if args.subject else "")
    doc = request(args, "GET", path, defaultToGlobal=bool(args.subject))
    return emit(args, doc, lambda: print(doc["mode"]))


def _mode_set(args) -> int:
    path = "/mode" + (f"/{_q(args.subject)}" if args.subject else "")
    doc = request(args, "PUT", path, {"mode": args.mode.upper()})
    return emit(args, doc, lambda: print(doc["mode"]))
