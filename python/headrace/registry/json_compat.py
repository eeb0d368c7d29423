"""JSON Schema compatibility over the schema as ``jsonschema`` accepted it
(headrace.registry.schema_types parses and checks it against its draft's
meta-schema; this module walks the resulting dict), with Confluent Schema
Registry's documented JSON Schema rules and its names for each kind of
difference. No PyPI library implements these rules: ``jsoncompat`` (a
semantic checker) answers only yes or no, so a 409 could give no reason,
and its current releases need Python >= 3.12.

Contract: ``differences(original, update)`` lists the incompatible
changes from ``original`` to ``update`` as (errorType, description) pairs:
changes after which ``update`` may reject a document ``original`` accepts.
The registry's BACKWARD asks ``differences(old, new)`` (the new schema
must accept what the old one did), FORWARD ``differences(new, old)``,
FULL both.

Rules covered (errorType: what ``update`` does that ``original`` did not;
all incompatible):

- TYPE_NARROWED / TYPE_CHANGED: ``type`` accepts fewer types or other
  types (``integer`` counts as within ``number``; widening is compatible).
- Content models of objects (``additionalProperties`` absent or true:
  open; false: closed; a schema: partially open):
  PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL (a property ``original`` did not
  name, added under an open ``original``: old documents may hold it with
  any value), PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
  REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL (a new property that is
  required; an optional one is compatible), PROPERTY_REMOVED_FROM_CLOSED_
  CONTENT_MODEL, PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_
  MODEL (removing a property is compatible when ``update`` is open);
  ADDITIONAL_PROPERTIES_REMOVED (open -> closed),
  ADDITIONAL_PROPERTIES_NARROWED (open -> a schema, or a narrower schema).
- REQUIRED_ATTRIBUTE_ADDED: a name ``original`` did not require is
  required (removing from ``required`` is compatible).
- Bounds: MINIMUM_ADDED / MINIMUM_INCREASED, MAXIMUM_ADDED /
  MAXIMUM_DECREASED, and the same for exclusiveMinimum/Maximum,
  minLength/maxLength, minItems/maxItems, minProperties/maxProperties
  (relaxing or removing a bound is compatible).
- MULTIPLE_OF_ADDED / MULTIPLE_OF_CHANGED (compatible when the new one
  divides the old one), PATTERN_ADDED / PATTERN_CHANGED,
  UNIQUE_ITEMS_ADDED, CONST_ADDED / CONST_CHANGED, NOT_TYPE_ADDED /
  NOT_TYPE_CHANGED, DEPENDENCY_ADDED (``dependencies``,
  ``dependentRequired``, ``dependentSchemas``).
- ENUM_ARRAY_NARROWED: an ``enum`` added, or a value of ``original``'s
  enum left out (extending an enum is compatible).
- Nested schemas are compared in place: ``properties``, ``items`` (a
  schema or, older drafts, an array of them), ``prefixItems``,
  ``additionalProperties`` schemas, ``definitions``/``$defs`` through
  local ``$ref`` (``#/...`` JSON pointers, resolved on each side's root).
- COMBINED_TYPE_SUBSCHEMAS_CHANGED: a branch of ``original``'s
  ``anyOf``/``oneOf`` no branch of ``update`` accepts wholly, or an
  ``allOf`` branch of ``update`` that no branch of ``original`` matches;
  COMBINED_TYPE_CHANGED: the keyword changes other than oneOf -> anyOf.
- SCHEMA_NARROWED: ``original`` is ``true``/``{}`` (anything) and
  ``update`` constrains; ``update`` is ``false``.

Not covered (documents judged on the keywords above only): ``if``/
``then``/``else``, ``patternProperties``, ``contains``, ``format``,
``propertyNames``, remote ``$ref``.
"""
from __future__ import annotations

NUMERIC_TYPES = ("integer", "number")
LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
COMBINED = ("anyOf", "oneOf", "allOf")
_ALL_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}


def _name(key: str) -> str:
    """minLength -> MIN_LENGTH (Confluent's errorType spelling)."""
    return "".join("_" + c if c.isupper() else c.upper() for c in key)


class _Walk:
    def __init__(self, original_root, update_root):
        self.roots = (original_root, update_root)
        self.stack: set[tuple[int, int]] = set()  # pairs being compared: $ref cycles
        self.out: list[tuple[str, str]] = []

    def add(self, kind: str, path: str, what: str) -> None:
        self.out.append((kind, f"{what} at path '{path or '#/'}'"))

    def resolve(self, side: int, schema):
        """``schema`` with local $refs followed (at most 32 deep)."""
        for _ in range(32):
            if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str) \
                    or not schema["$ref"].startswith("#"):
                return schema
            target = self.roots[side]
            for part in schema["$ref"][1:].split("/"):
                if not part:
                    continue
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, dict) and part in target:
                    target = target[part]
                elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                    target = target[int(part)]
                else:
                    return {}  # unresolvable: jsonschema would fail on use; judged as open
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **rest} if isinstance(target, dict) and rest else target
        return schema

    # -- the comparison ----------------------------------------------------------------
    def compare(self, path: str, old, new) -> None:
        old, new = self.resolve(0, old), self.resolve(1, new)
        key = (id(old), id(new))  # both alive while on the stack
        if key in self.stack:
            return  # a recursive $ref: judged where it started
        self.stack.add(key)
        try:
            self._compare(path, old, new)
        finally:
            self.stack.discard(key)

    def _compare(self, path: str, old, new) -> None:
        if old is False or new is True or (isinstance(new, dict) and not new):
            return  # nothing to accept / accepts anything
        if new is False or old is True or (isinstance(old, dict) and not old):
            self.add("SCHEMA_NARROWED", path, "The new schema accepts less than the old "
                                              "schema, which accepts anything")
            return
        if not isinstance(old, dict) or not isinstance(new, dict):
            return
        self._types(path, old, new)
        self._objects(path, old, new)
        self._arrays(path, old, new)
        self._constraints(path, old, new)
        self._combined(path, old, new)

    def _types(self, path, old, new) -> None:
        def types(s):
            t = s.get("type")
            got = set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set(_ALL_TYPES)
            return got | ({"integer"} if "number" in got else set())
        if "type" not in new:
            return
        was, now = types(old), types(new)
        if not was <= now:
            kind = "TYPE_NARROWED" if now < was else "TYPE_CHANGED"
            self.add(kind, path, f"The type changed from {old.get('type', 'any')!r} to "
                                 f"{new.get('type')!r}")

    def _objects(self, path, old, new) -> None:
        oprops, nprops = old.get("properties") or {}, new.get("properties") or {}
        oreq, nreq = set(old.get("required") or ()), set(new.get("required") or ())
        oap, nap = old.get("additionalProperties", True), new.get("additionalProperties", True)
        for name, sub in nprops.items():
            at = f"{path}/properties/{name}"
            if name in oprops:
                self.compare(at, oprops[name], sub)
            elif name in nreq and oap is not True and oap != {}:
                self.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", at,
                         f"The new schema requires the new property '{name}'")
            elif oap is True or oap == {}:
                if sub is not True and sub != {} or name in nreq:
                    self.add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", at,
                             f"The new schema adds the property '{name}' to the old schema's "
                             f"open content model (old documents may hold any value there)")
            elif isinstance(oap, dict):
                if self._sub_differs(at, oap, sub):
                    self.add("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", at,
                             f"The new property '{name}' accepts less than the old schema's "
                             f"additionalProperties")
        for name, sub in oprops.items():
            if name in nprops:
                continue
            at = f"{path}/properties/{name}"
            if nap is False:
                self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", at,
                         f"The property '{name}' is removed from a closed content model")
            elif isinstance(nap, dict) and nap and self._sub_differs(at, sub, nap):
                self.add("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", at,
                         f"The removed property '{name}' is not covered by the new schema's "
                         f"additionalProperties")
        for name in sorted(nreq - oreq):
            if name in oprops or name not in nprops:
                self.add("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required",
                         f"The property '{name}' is required in the new schema only")
        if oap is not False and nap is False:
            self.add("ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties",
                     "The new schema closes the content model (additionalProperties false)")
        elif isinstance(nap, dict) and nap and oap is not False:
            if oap is True or oap == {} or self._sub_differs(path, oap, nap):
                self.add("ADDITIONAL_PROPERTIES_NARROWED", f"{path}/additionalProperties",
                         "The new schema's additionalProperties accepts less")

    def _sub_differs(self, path, old, new) -> bool:
        """Whether comparing ``old`` with ``new`` finds a difference (not recorded)."""
        inner = _Walk(*self.roots)
        inner.stack = set(self.stack)
        inner.compare(path, old, new)
        return bool(inner.out)

    def _arrays(self, path, old, new) -> None:
        oi, ni = old.get("items"), new.get("items")
        if isinstance(oi, list) or isinstance(ni, list):  # tuple form of older drafts
            olist = oi if isinstance(oi, list) else []
            for i, sub in enumerate(ni if isinstance(ni, list) else []):
                if i < len(olist):
                    self.compare(f"{path}/items/{i}", olist[i], sub)
        elif ni is not None:
            self.compare(f"{path}/items", oi if oi is not None else True, ni)
        op, np_ = old.get("prefixItems") or [], new.get("prefixItems") or []
        for i, sub in enumerate(np_):
            self.compare(f"{path}/prefixItems/{i}", op[i] if i < len(op) else True, sub)
        if new.get("uniqueItems") is True and old.get("uniqueItems") is not True:
            self.add("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems", "Items must be unique in the "
                                                                   "new schema only")

    def _constraints(self, path, old, new) -> None:
        num = (int, float)
        for k in LOWER_BOUNDS + UPPER_BOUNDS:
            o, n = old.get(k), new.get(k)
            if not isinstance(n, num) or isinstance(n, bool):
                continue
            lower = k in LOWER_BOUNDS
            if not isinstance(o, num) or isinstance(o, bool):
                self.add(f"{_name(k)}_ADDED", f"{path}/{k}", f"{k} {n} is added")
            elif (n > o) if lower else (n < o):
                self.add(f"{_name(k)}_{'INCREASED' if lower else 'DECREASED'}", f"{path}/{k}",
                         f"{k} changed from {o} to {n}")
        o, n = old.get("multipleOf"), new.get("multipleOf")
        if isinstance(n, num) and n:
            if not isinstance(o, num):
                self.add("MULTIPLE_OF_ADDED", f"{path}/multipleOf", f"multipleOf {n} is added")
            elif o != n and (o / n) != int(o / n):
                self.add("MULTIPLE_OF_CHANGED", f"{path}/multipleOf",
                         f"multipleOf changed from {o} to {n}, which does not divide it")
        for k, added, changed in (("pattern", "PATTERN_ADDED", "PATTERN_CHANGED"),
                                  ("const", "CONST_ADDED", "CONST_CHANGED"),
                                  ("not", "NOT_TYPE_ADDED", "NOT_TYPE_CHANGED")):
            if k in new and (k not in old or old[k] != new[k]):
                self.add(changed if k in old else added, f"{path}/{k}",
                         f"{k} {'changed' if k in old else 'is added'}")
        for k in ("dependencies", "dependentRequired", "dependentSchemas"):
            for name, dep in (new.get(k) or {}).items():
                if (old.get(k) or {}).get(name) != dep:
                    self.add("DEPENDENCY_ADDED", f"{path}/{k}/{name}",
                             f"{k} of '{name}' added or changed")
        if isinstance(new.get("enum"), list):
            oe = old.get("enum")
            missing = [v for v in oe if v not in new["enum"]] if isinstance(oe, list) else None
            if missing is None or missing:
                self.add("ENUM_ARRAY_NARROWED", f"{path}/enum",
                         "an enum is added" if missing is None else
                         f"the enum no longer holds {missing!r}")

    def _combined(self, path, old, new) -> None:
        okw = next((k for k in COMBINED if isinstance(old.get(k), list)), None)
        nkw = next((k for k in COMBINED if isinstance(new.get(k), list)), None)
        if nkw is None:
            return
        if okw is None:  # old documents must satisfy the new branches
            if nkw == "allOf":
                for i, b in enumerate(new[nkw]):
                    self.compare(f"{path}/allOf/{i}", old, b)
            elif all(self._sub_differs(path, old, b) for b in new[nkw]):
                self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/{nkw}",
                         f"{nkw} is added and none of its branches accepts what the old "
                         f"schema did")
            return
        if okw != nkw and (okw, nkw) != ("oneOf", "anyOf"):
            self.add("COMBINED_TYPE_CHANGED", f"{path}/{nkw}", f"{okw} changed to {nkw}")
            return
        if nkw == "allOf":
            for i, b in enumerate(new[nkw]):
                if all(self._sub_differs(path, a, b) for a in old[okw]):
                    self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/allOf/{i}",
                             "a branch of allOf is added or narrowed")
            return
        for i, a in enumerate(old[okw]):
            if all(self._sub_differs(path, a, b) for b in new[nkw]):
                self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/{okw}/{i}",
                         f"no branch of the new {nkw} accepts what branch {i} did")


def differences(original, update) -> list[tuple[str, str]]:
    """See the module's contract."""
    walk = _Walk(original, update)
    walk.compare("#", original, update)
    return walk.out
