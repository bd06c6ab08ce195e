"""Check spec documents: their format (JSON Schema), then the rules Kafka's own generator applies.

Every rejection is a :class:`SpecError`, one line naming the file, the path inside the spec
as struct and field names (``MetadataResponse.Topics.Partitions.ErrorCode``), the rule and
the offending value. Checks collect every problem they can find before raising
:class:`SpecErrors`, so one run shows all of a spec's mistakes.

:func:`validate_document` handles one file; :func:`validate_directory` the rules that span
files (request/response pairs, unique names).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]

from .errors import SpecError, SpecErrors, warn
from .loader import as_bool, normalize
from .types import INT_RANGES, FieldType
from .versions import NONE, Versions

# ----------------------------------------------------------------------------- format


@cache
def spec_schema() -> dict[str, Any]:
    """The JSON Schema of the raw spec format, shipped beside this module."""
    here = resources.files(__package__ or "kafkagen.generator")
    text = here.joinpath("spec_schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Any:
    schema = spec_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _locate(raw: Mapping[str, Any], file: str, where: Iterable[str | int]) -> tuple[str, str]:
    """Split a JSON path into (struct/field names, the trailing key it points at).

    ``['fields', 2, 'fields', 0, 'type']`` becomes ``('Msg.Topics.Name', 'type')``.
    """
    name = raw.get("name")
    names = [name if isinstance(name, str) else file.removesuffix(".json")]
    node: Any = raw
    keys = list(where)
    i = 0
    while i < len(keys):
        key = keys[i]
        nxt = keys[i + 1] if i + 1 < len(keys) else None
        if key in ("fields", "commonStructs") and isinstance(nxt, int) and isinstance(node, dict):
            node = node[key][nxt]
            label = node.get("name") if isinstance(node, dict) else None
            names.append(label if isinstance(label, str) else f"{key}[{nxt}]")
            i += 2
            continue
        break
    rest = keys[i:]
    subject = ""
    for part in rest:
        subject += f"[{part}]" if isinstance(part, int) else ("." if subject else "") + str(part)
    return ".".join(names), subject


def _schema_errors(raw: dict[str, Any], file: str) -> list[SpecError]:
    def order(e: Any) -> list[tuple[bool, Any]]:
        return [(isinstance(p, str), p) for p in e.absolute_path]

    errors: list[SpecError] = []
    seen: set[str] = set()

    def add(err: SpecError) -> None:
        if err.line() not in seen:
            seen.add(err.line())
            errors.append(err)

    for e in sorted(_validator().iter_errors(raw), key=order):
        path, subject = _locate(raw, file, e.absolute_path)
        schema = e.schema if isinstance(e.schema, dict) else {}
        if e.validator == "additionalProperties":
            allowed = set(schema.get("properties", {}))
            for key in e.instance:
                if key not in allowed:
                    add(SpecError(file, path, "unknown key", key))
        elif e.validator == "required":
            for key in e.validator_value:
                if key not in e.instance:
                    add(SpecError(file, path, f"missing required key {key!r}"))
        elif e.validator == "anyOf" and "x-anyOf-rule" in schema:
            add(SpecError(file, path, schema["x-anyOf-rule"]))
        else:
            rule = schema.get("x-rule", e.message)
            add(SpecError(file, path, f"{subject} {rule}" if subject else rule, e.instance))
    return errors


# ----------------------------------------------------------------------------- semantics

#: The element type each entity type goes with (Kafka's EntityType); arrays of it also fit.
ENTITY_TYPES = {
    "transactionalId": "string",
    "producerId": "int64",
    "groupId": "string",
    "topicName": "string",
    "brokerId": "int32",
}

#: Kinds of spec that carry an apiKey: the API's messages, KRaft metadata records and the
#: coordinators' records (there the apiKey is the record type, the key's int16 prefix).
KEYED_TYPES = ("request", "response", "metadata", "coordinator-key", "coordinator-value")
#: A coordinator record's key spec and its value spec share the apiKey.
_RECORD_PAIRS = {"coordinator-key": "coordinator-value", "coordinator-value": "coordinator-key"}

_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_DECIMAL = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_UUID = re.compile(r"^[A-Za-z0-9_-]{22}$")
_VERSION_MAX = 0x7FFF


@dataclass
class _Checker:
    """Walks one normalized spec, collecting rule breaks."""

    file: str
    doc: dict[str, Any]
    errors: list[SpecError] = field(default_factory=list)
    valid: Versions = NONE
    flexible: Versions = NONE
    common: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Every struct name defined in this message, with where it was defined.
    structs: dict[str, str] = field(default_factory=dict)

    def err(self, path: str, rule: str, value: object = None) -> None:
        self.errors.append(SpecError(self.file, path, rule, value))

    def versions(self, path: str, key: str, text: str) -> Versions | None:
        # The schema vouches for the grammar; what is left is order and the 16-bit bound.
        try:
            return Versions.parse(text)
        except ValueError:
            self.err(
                path,
                f"{key} must run from a lower to a higher version, both at most {_VERSION_MAX}",
                text,
            )
            return None

    # -- message

    def check(self) -> None:
        doc = self.doc
        name: str = doc["name"]
        kind: str = doc["type"]
        valid = self.versions(name, "validVersions", doc["validVersions"])
        if valid is None:
            return  # every later version check would only echo this one
        self.valid = valid
        if valid.open_ended:
            self.err(
                name,
                "validVersions must end at a highest version, not be open-ended",
                doc["validVersions"],
            )

        if kind in ("request", "response"):
            suffix = kind.capitalize()
            if not name.endswith(suffix) or name == suffix:
                self.err(name, f"the name of a {kind} must end in {suffix}", name)
        api_key = doc.get("apiKey")
        if kind in KEYED_TYPES:
            if api_key is None:
                self.err(name, f"a {kind} spec needs an apiKey")
            elif not 0 <= api_key <= _VERSION_MAX:
                self.err(name, f"apiKey must be between 0 and {_VERSION_MAX}", api_key)
        elif api_key is not None:
            self.err(
                name,
                "apiKey is only allowed on request, response, metadata and record specs",
                api_key,
            )
        if doc.get("listeners") and kind != "request":
            self.err(name, "listeners are only allowed on requests", doc["listeners"])
        if doc.get("latestVersionUnstable") and kind != "request":
            self.err(name, "latestVersionUnstable is only allowed on requests", True)

        if "deprecatedVersions" in doc:
            deprecated = self.versions(name, "deprecatedVersions", doc["deprecatedVersions"])
            if deprecated is not None and deprecated not in valid:
                self.err(
                    name,
                    f"deprecatedVersions must lie inside validVersions {valid}",
                    doc["deprecatedVersions"],
                )

        # A spec without versions is a retired API: nothing of it is ever encoded.
        if not valid.empty:
            if "flexibleVersions" not in doc:
                # Kafka's generators up to 2.8 read a missing value as none, and files of
                # those releases rely on it (OffsetDelete, SaslHandshake); 3.0+ require it.
                warn(
                    self.file,
                    name,
                    "flexibleVersions is missing: read as none, as Kafka up to 2.8 did"
                    " (Kafka 3.0+ requires none, or N+ for the first flexible version)",
                )
            else:
                flexible = self.versions(name, "flexibleVersions", doc["flexibleVersions"])
                if flexible is not None:
                    self.flexible = flexible
                    if not flexible.empty and not flexible.open_ended:
                        self.err(
                            name,
                            "flexibleVersions must be none or open-ended (N+)",
                            doc["flexibleVersions"],
                        )

        self.structs[name] = name  # a nested struct named like the message would clash
        self.check_common_structs(name)
        self.check_struct(name, doc.get("fields", []), valid, top=True)

    def check_common_structs(self, name: str) -> None:
        declared: list[tuple[str, dict[str, Any], Versions | None]] = []
        for struct in self.doc.get("commonStructs", []):
            sname: str = struct["name"]
            path = f"{name}.{sname}"
            if sname in self.common:
                self.err(path, "common struct defined twice", sname)
                continue
            self.common[sname] = struct
            self.structs[sname] = path
            versions = self.versions(path, "versions", struct["versions"])
            declared.append((path, struct, versions))
        # Fields after all names are known: common structs may use one another.
        for path, struct, versions in declared:
            if versions is not None:
                self.check_struct(path, struct["fields"], versions)

    # -- struct

    def check_struct(
        self, path: str, fields: list[dict[str, Any]], parent: Versions, top: bool = False
    ) -> None:
        names: set[str] = set()
        tags: dict[int, str] = {}
        for f in fields:
            fname: str = f["name"]
            fpath = f"{path}.{fname}"
            if fname in names:
                self.err(fpath, "field name used twice in the same struct", fname)
            names.add(fname)
            tag = f.get("tag")
            if tag is not None:
                if tag in tags:
                    self.err(fpath, f"tag already used by {tags[tag]} in the same struct", tag)
                else:
                    tags[tag] = fname
            self.check_field(fpath, f, parent, top)
        # Tags are varints on the wire: Kafka insists they run 0, 1, 2, ... with no gaps.
        used = sorted(t for t in tags if t >= 0)
        for expected, tag in enumerate(used):
            if tag != expected:
                self.err(path, f"tags must be contiguous from 0, but {expected} is unused", used)
                break

    # -- field

    def check_field(self, path: str, f: dict[str, Any], parent: Versions, top: bool) -> None:
        ftype = FieldType.parse(f["type"])
        versions = self.versions(path, "versions", f["versions"])
        if versions is None:
            return
        # Kafka's generator never checks a field's versions against its parent's: after
        # KIP-896 (4.0) dropped old versions, fields of those versions stayed in the files
        # (ListOffsetsResponse...OldStyleOffsets in 0 under 1-11), simply never on the wire.
        effective = versions.intersect(parent)

        nullable = NONE
        if "nullableVersions" in f:
            parsed = self.versions(path, "nullableVersions", f["nullableVersions"])
            nullable = parsed if parsed is not None else NONE
            if not nullable.empty:
                if not ftype.can_be_nullable:
                    self.err(
                        path,
                        f"nullableVersions is not allowed on type {ftype}",
                        f["nullableVersions"],
                    )
                elif nullable.intersect(versions).empty:
                    self.err(
                        path,
                        f"nullableVersions share no version with versions {versions}",
                        f["nullableVersions"],
                    )

        self.check_tag(path, f, ftype, versions, nullable)

        if f.get("zeroCopy") and ftype.name != "bytes":
            self.err(path, "zeroCopy is only allowed on bytes fields", str(ftype))
        if "flexibleVersions" in f:
            self.versions(path, "flexibleVersions", f["flexibleVersions"])
            if not ftype.can_be_flexible:
                self.err(
                    path, "flexibleVersions is only allowed on string and bytes fields", str(ftype)
                )
        if f.get("mapKey") and top:
            self.err(path, "mapKey is not allowed on a message's top-level fields", True)

        entity = f.get("entityType", "unknown")
        if entity in ENTITY_TYPES:
            base = ENTITY_TYPES[entity]
            element = ftype.element or ftype
            if element.name != base:
                self.err(path, f"entityType {entity} needs type {base} or []{base}", str(ftype))

        self.check_nested(path, f, ftype, effective if not effective.empty else versions)
        if "default" in f:
            self.check_default(path, f["default"], ftype, versions, nullable)

    def check_tag(
        self, path: str, f: dict[str, Any], ftype: FieldType, versions: Versions, nullable: Versions
    ) -> None:
        tag = f.get("tag")
        tagged = NONE
        if "taggedVersions" in f:
            parsed = self.versions(path, "taggedVersions", f["taggedVersions"])
            tagged = parsed if parsed is not None else NONE
        if tag is None:
            if not tagged.empty:
                self.err(path, "taggedVersions needs a tag", f["taggedVersions"])
            return
        if tag < 0:
            self.err(path, "tag must not be negative", tag)
        if ftype.name == "records":
            self.err(path, "records fields cannot be tagged", tag)
        if f.get("mapKey"):
            self.err(path, "a tagged field cannot be a mapKey", True)
        if tagged.empty:
            self.err(path, "a tagged field needs taggedVersions", tag)
            return
        text = f["taggedVersions"]
        if not tagged.open_ended:
            self.err(path, "taggedVersions must be open-ended (N+)", text)
        if tagged != versions:
            self.err(path, f"taggedVersions must equal versions {versions}", text)
        # A field-level flexibleVersions (string/bytes only) supplies its own encoding.
        if "flexibleVersions" not in f and tagged not in self.flexible:
            self.err(
                path,
                f"taggedVersions must lie inside the message's flexibleVersions {self.flexible}",
                text,
            )
        both = nullable.intersect(tagged)
        if not both.empty and both != tagged:
            self.err(
                path,
                f"nullableVersions must cover all of taggedVersions {tagged} or none of them",
                f["nullableVersions"],
            )

    def check_nested(
        self, path: str, f: dict[str, Any], ftype: FieldType, versions: Versions
    ) -> None:
        sname = ftype.struct_name
        fields = f.get("fields") or []
        if sname is None:
            if fields:
                self.err(path, "only struct and struct-array fields can have fields", str(ftype))
            return
        if sname in self.common:
            if fields:
                self.err(path, f"common struct {sname} cannot be redefined inline", sname)
            return
        if not fields:
            self.err(
                path, f"struct type {sname} has no fields here and is not a common struct", sname
            )
            return
        if sname in self.structs:
            self.err(path, f"struct {sname} is already defined at {self.structs[sname]}", sname)
        else:
            self.structs[sname] = path
        self.check_struct(path, fields, versions)

    def check_default(
        self, path: str, value: str, ftype: FieldType, versions: Versions, nullable: Versions
    ) -> None:
        if value == "":
            return  # the type's zero value, as Kafka reads an empty default
        name = ftype.name
        if ftype.is_array or ftype.is_struct or name in ("bytes", "records"):
            kind = "array" if ftype.is_array else "struct" if ftype.is_struct else name
            if value != "null":
                article = "an" if kind[0] in "aeiou" else "a"
                self.err(
                    path, f"the default of {article} {kind} field can only be empty or null", value
                )
                return
        elif name == "bool":
            if value not in ("true", "false"):
                self.err(path, "the default of a bool field must be true or false", value)
        elif name in INT_RANGES:
            low, high = INT_RANGES[name]
            if _HEX.match(value):
                number = int(value[2:], 16)
            elif _DECIMAL.match(value):
                number = int(value)
            else:
                self.err(
                    path,
                    f"the default of an {name} field must be a decimal or 0x hex integer",
                    value,
                )
                return
            if not low <= number <= high:
                self.err(path, f"the default does not fit {name} ({low} to {high})", value)
        elif name == "float64":
            if not _FLOAT.match(value):
                self.err(path, "the default of a float64 field must be a decimal number", value)
        elif name == "uuid":
            if not _is_uuid_text(value):
                self.err(
                    path,
                    "the default of a uuid field must be 22 characters of URL-safe base64",
                    value,
                )
        if value == "null" and ftype.can_be_nullable and versions not in nullable:
            self.err(
                path,
                f"a null default needs the field nullable in all its versions {versions}",
                value,
            )


def _is_uuid_text(text: str) -> bool:
    if not _UUID.match(text):
        return False
    try:
        return len(base64.urlsafe_b64decode(text + "==")) == 16
    except (binascii.Error, ValueError):
        return False


def _canonical(doc: dict[str, Any]) -> dict[str, Any]:
    """Finish what normalize leaves loose: mapKey as a real bool, recursively."""
    out = dict(doc)
    if "mapKey" in out:
        out["mapKey"] = as_bool(out["mapKey"])
    for key in ("fields", "commonStructs"):
        if key in out:
            out[key] = [_canonical(f) for f in out[key]]
    return out


def validate_document(raw: dict[str, Any], file: str) -> dict[str, Any]:
    """Check one raw spec (as loaded) and return it normalized.

    Raises SpecErrors listing every format problem, or if the format is sound, every
    semantic rule the spec breaks.
    """
    if not isinstance(raw, dict):
        raise SpecErrors([SpecError(file, "", "a spec must be a JSON object", type(raw).__name__)])
    errors = _schema_errors(raw, file)
    if errors:
        raise SpecErrors(errors)
    doc = _canonical(normalize(raw))
    checker = _Checker(file, doc)
    checker.check()
    if checker.errors:
        raise SpecErrors(checker.errors)
    return doc


# ----------------------------------------------------------------------------- directory


def validate_directory(docs: Mapping[str, Mapping[str, Any]]) -> None:
    """Rules across a set of normalized specs, given as {file name: document}.

    Each API key has exactly one request and one response, named FooRequest/FooResponse with
    the same validVersions; metadata record keys are unique; message names are unique (each
    becomes a class and a module). Raises SpecErrors.
    """
    errors: list[SpecError] = []
    names: dict[str, str] = {}
    keyed: dict[tuple[str, int], str] = {}
    families: dict[tuple[str, int, str], str] = {}
    for file in sorted(docs):
        doc = docs[file]
        name, kind, key = doc["name"], doc["type"], doc.get("apiKey")
        if name in names:
            errors.append(
                SpecError(file, name, f"message name already used in {names[name]}", name)
            )
        else:
            names[name] = file
        if key is None:
            if kind in KEYED_TYPES:
                errors.append(SpecError(file, name, f"a {kind} spec needs an apiKey"))
            continue
        if kind not in KEYED_TYPES:
            errors.append(
                SpecError(
                    file,
                    name,
                    "apiKey is only allowed on request, response, metadata and record specs",
                    key,
                )
            )
            continue
        if kind in _RECORD_PAIRS:
            # Each coordinator numbers its own record types (the transaction log and the
            # share coordinator both have a type 0): a record family is its key and value.
            stem = name.removesuffix("Key").removesuffix("Value")
            if (kind, key, stem) in families:
                errors.append(SpecError(file, name, f"record {kind} given twice", key))
            families[kind, key, stem] = file
            continue
        if (kind, key) in keyed:
            errors.append(
                SpecError(
                    file, name, f"apiKey already used by the {kind} in {keyed[kind, key]}", key
                )
            )
            continue
        keyed[kind, key] = file

    for (kind, key, stem), file in sorted(families.items()):
        if (_RECORD_PAIRS[kind], key, stem) not in families:
            errors.append(
                SpecError(
                    file, docs[file]["name"], f"no {_RECORD_PAIRS[kind]} spec has this apiKey", key
                )
            )

    for (kind, key), file in sorted(keyed.items()):
        doc = docs[file]
        if kind == "metadata":
            continue
        other_kind = "response" if kind == "request" else "request"
        if (other_kind, key) not in keyed:
            errors.append(
                SpecError(file, doc["name"], f"no {other_kind} spec has this apiKey", key)
            )
            continue
        if kind == "request":
            continue  # each pair is compared once, from the response's side
        request = docs[keyed["request", key]]
        expected = request["name"].removesuffix("Request") + "Response"
        if doc["name"] != expected:
            errors.append(
                SpecError(
                    file,
                    doc["name"],
                    f"the response to {request['name']} must be named {expected}",
                    doc["name"],
                )
            )
        if Versions.parse(doc["validVersions"]) != Versions.parse(request["validVersions"]):
            errors.append(
                SpecError(
                    file,
                    doc["name"],
                    f"validVersions must equal the request's {request['validVersions']}",
                    doc["validVersions"],
                )
            )
    if errors:
        raise SpecErrors(errors)
