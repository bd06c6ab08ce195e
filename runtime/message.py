"""Base classes of generated messages: version dispatch, equality, repr, keyed arrays."""

from __future__ import annotations

import enum
import gc
import hashlib
import os
import struct
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, ClassVar, Final, Generic, Literal, Protocol, TypeVar, cast

from .errors import DecodeError, UnsupportedVersionError
from .wire import Buffer, FieldUnsupported, RawTags, Writer, unsupported

T = TypeVar("T", bound="Struct")
M = TypeVar("M", bound="Message")

#: Messages larger than this decode with the cyclic GC paused (_native.c's GC_PAUSE_BYTES,
#: for the accelerator's compiled decode method, is the same).
_GC_PAUSE_BYTES = 4096

Decoder = Callable[[Buffer, int, int], tuple[Any, int]]
Encoder = Callable[[Any, Writer], None]
#: A wire layout's plan for the accelerator: (class, flexible, ops, tagged ops, the struct's
#: name in errors, the tags its fields have only at other versions), plain data the
#: generator emits next to the Python codecs of the layout.
Plan = tuple[Any, ...]
#: A struct's fields: (class, ((attribute, JSON key, tagged, ever nullable, nested table),
#: ...) in spec order, first free tag).
FieldTable = tuple[Any, ...]


class Struct:
    """Any generated struct: a message or one of its nested structs.

    Subclasses set ``__slots__`` to their fields plus ``unknown_tagged_fields``, and the
    generator fills ``_decoders`` / ``_encoders`` with one straight-line function per
    version, and ``_to_json`` / ``_from_json``. ``_field_table`` and ``_plans`` describe
    the fields and each version's layout as data (for the accelerator, and for tools that
    walk messages generically, such as the fuzz's random builders).
    """

    __slots__ = ()
    _decoders: ClassVar[dict[int, Decoder]] = {}
    _encoders: ClassVar[dict[int, Encoder]] = {}
    #: Attribute names of the fields, in spec order.
    _fields: ClassVar[tuple[str, ...]] = ()
    #: For elements of mapKey arrays: the attribute names forming the key.
    _map_key: ClassVar[tuple[str, ...]] = ()
    _field_table: ClassVar[FieldTable | None] = None
    _plans: ClassVar[dict[int, Plan]] = {}
    unknown_tagged_fields: RawTags

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        slots: tuple[str, ...] = self.__slots__
        return all(getattr(self, a) == getattr(other, a) for a in slots)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        parts = ", ".join(f"{a}={getattr(self, a)!r}" for a in self._fields)
        return f"{type(self).__qualname__}({parts})"

    def to_json(self, version: int) -> dict[str, Any]:
        """Kafka's JSON converter form of this struct at ``version``."""
        # No cast(): building dict[str, Any] on every call cost more than a native converter.
        d: dict[str, Any] = type(self)._to_json(self, version)
        return d

    @classmethod
    def from_json(cls: type[T], obj: Any, version: int) -> T:
        """Build from Kafka's JSON converter form at ``version``."""
        o: T = cls._from_json(obj, version)
        return o

    @staticmethod
    def _to_json(o: Any, version: int) -> Any:  # replaced by generated code
        raise NotImplementedError

    @staticmethod
    def _from_json(obj: Any, version: int) -> Any:  # replaced by generated code
        raise NotImplementedError


class Message(Struct):
    """A top-level message (request, response, header or data) with its version range."""

    __slots__ = ()
    API_KEY: ClassVar[int | None] = None
    LOWEST_VERSION: ClassVar[int] = 0
    HIGHEST_VERSION: ClassVar[int] = 0
    #: The first flexible version, or None when no version is flexible.
    FIRST_FLEXIBLE_VERSION: ClassVar[int | None] = None
    LATEST_VERSION_UNSTABLE: ClassVar[bool] = False
    KIND: ClassVar[str] = ""

    @classmethod
    def decode(cls: type[M], data: Buffer, version: int) -> M:
        """Decode ``data`` (bytes, bytearray or memoryview), which must be consumed whole."""
        end = len(data)
        decoder = cls._decoders.get(version)
        if decoder is None or end > _GC_PAUSE_BYTES:
            obj, pos = cls.decode_prefix(data, version)
        else:  # decode_prefix inlined: small messages are where a call's cost shows
            try:
                obj, pos = decoder(data, 0, end)
            except (DecodeError, IndexError, struct.error, UnicodeDecodeError) as e:
                raise _decode_error(e, cls.__name__, version, end) from None
        if pos != end:
            raise DecodeError(f"{end - pos} trailing bytes", cls.__name__, version, pos)
        return obj

    #: What a compiled ``decode`` (see :func:`bind_native`) runs for anything it does not
    #: take whole, so its results and errors are this method's.
    _decode_in_python = decode

    @classmethod
    def decode_prefix(cls: type[M], data: Buffer, version: int) -> tuple[M, int]:
        """Decode a message at the start of ``data``; return it and where it ended.

        For framing where the length of a part is only known by decoding it, such as a
        request header followed by its body.
        """
        try:
            decoder = cls._decoders[version]
        except KeyError:
            raise UnsupportedVersionError(
                f"{cls.__name__} has no version {version} "
                f"(supported {cls.LOWEST_VERSION}-{cls.HIGHEST_VERSION})"
            ) from None
        end = len(data)
        # A large message allocates thousands of objects that all stay alive: pausing the
        # cyclic GC meanwhile saves the collections that would find nothing to free.
        pause_gc = end > _GC_PAUSE_BYTES and gc.isenabled()
        if pause_gc:
            gc.disable()
        try:
            obj, pos = decoder(data, 0, end)
        except (DecodeError, IndexError, struct.error, UnicodeDecodeError) as e:
            raise _decode_error(e, cls.__name__, version, end) from None
        finally:
            if pause_gc:
                gc.enable()
        return cast(M, obj), pos

    def encode(self, version: int) -> bytes:
        """The wire bytes of this message at ``version``."""
        out: list[bytes] = []
        self._write_to(out.append, version)
        return b"".join(out)

    #: What a compiled ``encode`` (see :func:`bind_native`) runs for anything but a plain
    #: success, so its results and errors are this method's.
    _encode_in_python = encode

    def encode_parts(self, version: int) -> list[bytes | memoryview]:
        """The wire bytes of this message at ``version`` as pieces to send in order: their
        concatenation is ``encode(version)``, and each stored batch (a ``records`` or
        zero-copy ``bytes`` value, bytes or memoryview) of at least `PARTS_MIN` bytes is
        one of them, by reference, instead of being copied into the encoding."""
        if native is not None:
            compiled: list[bytes | memoryview] | None = native.encode_parts(
                self, version, PARTS_MIN
            )
            if compiled is not None:
                return compiled
        pieces: list[bytes | memoryview] = []
        self._write_to(pieces.append, version, python=True)
        parts: list[bytes | memoryview] = []
        start = 0
        for i, piece in enumerate(pieces):
            # The Python encoders append a bytes value as it is, after its length.
            if len(piece) >= PARTS_MIN and type(piece) in _BY_REFERENCE:
                if i > start:
                    parts.append(b"".join(pieces[start:i]))
                parts.append(piece)
                start = i + 1
        if start < len(pieces) or not parts:
            parts.append(b"".join(pieces[start:]))
        return parts

    def _write_to(self, w: Callable[[Any], object], version: int, python: bool = False) -> None:
        """Run the version's encoder with writer ``w``, raising what `encode` raises; with
        ``python``, the generated Python encoder even where a compiled one stands in front
        (it hands ``w`` each value's own bytes, where the compiled one hands one bytes)."""
        try:
            encoder = self._encoders[version]
            if python:
                encoder = getattr(getattr(encoder, "__self__", None), "python_encoder", encoder)
        except KeyError:
            raise UnsupportedVersionError(
                f"{type(self).__name__} has no version {version} "
                f"(supported {self.LOWEST_VERSION}-{self.HIGHEST_VERSION})"
            ) from None
        try:
            encoder(self, w)
        except FieldUnsupported as e:
            raise UnsupportedVersionError(
                f"cannot write {e.path} at version {version}: {e.why}"
            ) from None
        except (struct.error, TypeError, AttributeError, OverflowError) as e:
            # A field holds a value of the wrong type or range for its wire type.
            raise ValueError(f"cannot encode {type(self).__name__} v{version}: {e}") from None


#: From this size a stored batch leaves `Message.encode_parts` as its own piece: below it,
#: copying it costs less than one more buffer in a gathering write (measured: see
#: docs/kafka-benchmark.md).
PARTS_MIN: Final = 8192
_BY_REFERENCE: Final = (bytes, memoryview)


def _decode_error(error: Exception, message: str, version: int, end: int) -> DecodeError:
    """The DecodeError for what a decoder raised: the message, version and offset added."""
    if isinstance(error, DecodeError):  # raised by a wire reader
        return DecodeError(error.reason, message, version, error.offset)
    offset = _failing_offset(error, end)
    if isinstance(error, UnicodeDecodeError):
        reason = f"invalid UTF-8 in a string: {error.reason}"
    elif isinstance(error, struct.error):
        # A fused run of fixed-width fields, unpacked from the whole buffer, ran past its
        # end. struct.error's own text varies between Python versions: the reason is the
        # project's own, the one the accelerator gives.
        reason = f"truncated: fixed-width fields run past the end ({end - offset} bytes left)"
    else:
        reason = f"truncated ({error})"
    return DecodeError(reason, message, version, offset)


def _failing_offset(error: BaseException, default: int) -> int:
    """Where a fast-path read failed, found in the innermost codec frame.

    Generated decoders and wire readers keep the offset of the value being read in a
    local named ``pos`` (string readers: its text in ``start``); reading it after the
    fact keeps bounds tests off the fast path. For invalid UTF-8 the offset is the bad
    byte's.
    """
    # Skip the catching frame: reading a running frame's locals would store the exception
    # in them and leave a reference cycle behind every failed decode.
    tb = error.__traceback__.tb_next if error.__traceback__ is not None else None
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    error.__traceback__ = None  # the frames are not needed any more
    # Innermost first, and stop at the first frame that holds an offset: reading a frame's
    # locals copies them all, so walking every frame made failed decodes slow.
    for frame in reversed(frames):
        local = frame.f_locals
        pos = local.get("pos")
        if isinstance(pos, int):
            start = local.get("start")
            if isinstance(error, UnicodeDecodeError) and isinstance(start, int):
                return start + error.start
            return pos
    return default


class KeyedList(list[T], Generic[T]):
    """A mapKey array: a list that keeps wire order and finds items by their key fields."""

    __slots__ = ()

    def find(self, *key: Any) -> T | None:
        """The first item whose key fields equal ``key``, or None."""
        for item in self:
            if tuple(getattr(item, a) for a in item._map_key) == key:
                return item
        return None

    def find_all(self, *key: Any) -> list[T]:
        return [i for i in self if tuple(getattr(i, a) for a in i._map_key) == key]


class _Missing(enum.Enum):
    """The default of an argument whose default is a fresh list or struct."""

    MISSING = 0

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
Missing = Literal[_Missing.MISSING]


class _New(Protocol):
    def __call__(self, cls: type[T], /) -> T: ...


#: ``object.__new__``, typed: decoders build instances without running ``__init__``.
new_instance: _New = cast(_New, object.__new__)


def bind_codecs(
    cls: type[Struct],
    to_json: Callable[[Any, int], Any],
    from_json: Callable[[Any, int], Any],
    *layouts: tuple[int, int, Decoder, Encoder],
) -> None:
    """Attach a generated struct's codecs: each layout serves versions first..last."""
    cls._decoders = {v: dec for first, last, dec, _ in layouts for v in range(first, last + 1)}
    cls._encoders = {v: enc for first, last, _, enc in layouts for v in range(first, last + 1)}
    cls._to_json = staticmethod(to_json)  # type: ignore[method-assign, assignment]
    cls._from_json = staticmethod(from_json)  # type: ignore[method-assign, assignment]
    cls._fields = tuple(cls.__slots__)[:-1]  # every slot but unknown_tagged_fields


def stale_native(module: ModuleType, sources: list[str] | None = None) -> str | None:
    """Why a compiled extension must not be used, or None when it may.

    It carries the SHA-256 of the C ``sources`` it was compiled from (default: the
    accelerator's ``_native.c`` and ``_native.h``). Where they sit beside it (a checkout,
    an editable install) and have changed since, the build is stale: its code would
    disagree with the generated plans it is driven by.
    """
    here = os.path.dirname(__file__)
    if sources is None:
        sources = [os.path.join(here, "_native.c"), os.path.join(here, "_native.h")]
    if not all(os.path.isfile(s) for s in sources):
        return None  # an installed wheel: the build is the one shipped with this code
    digest = hashlib.sha256()
    for source in sources:
        with open(source, "rb") as f:
            digest.update(f.read())
    if getattr(module, "SOURCE_SHA256", "") == digest.hexdigest():
        return None
    source = sources[0]
    return (
        f"kafkagen: {module.__file__} was built from another version of {source}; "
        "using the pure-Python codecs. Rebuild it with 'bash tools/dev.sh test' or "
        "'pip install -e .'"
    )


def _load_native() -> ModuleType | None:
    """The compiled accelerator, unless missing, stale, or turned off by
    KAFKAGEN_PURE_PYTHON=1."""
    if os.environ.get("KAFKAGEN_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    refusal = stale_native(cast(ModuleType, _native))
    if refusal is not None:
        warnings.warn(refusal, RuntimeWarning, stacklevel=2)
        return None
    _native.configure(KeyedList, Struct, DecodeError, unsupported)
    return cast(ModuleType, _native)


#: The compiled accelerator module, or None when every codec runs in pure Python.
native: Final = _load_native()


def bind_native(
    cls: type[Struct], table: FieldTable | None, *layouts: tuple[int, int, Plan]
) -> None:
    """Keep the struct's field ``table`` and each version's plan on ``cls``, and put compiled
    codecs in front of the Python ones bound by :func:`bind_codecs`.

    Each layout's native decoder and encoder take the same arguments as the Python pair
    and hand any input or value they do not take to it, so errors stay the Python ones.
    A plan the accelerator cannot compile keeps that struct on its Python codecs.

    With the struct's field ``table``, the versions whose layout compiled also get compiled
    JSON converters, which hand anything irregular to the generated ones.
    """
    cls._field_table = table
    cls._plans = {v: plan for first, last, plan in layouts for v in range(first, last + 1)}
    if native is None:
        return
    decoders = dict(cls._decoders)
    encoders = dict(cls._encoders)
    codecs = {}
    for first, last, plan in layouts:
        try:
            codec = native.Codec(cls, plan, cls._decoders[first], cls._encoders[first])
        except NotImplementedError:
            continue
        for v in range(first, last + 1):
            decoders[v] = codec.decode
            encoders[v] = codec.encode
            codecs[v] = codec
    cls._decoders = decoders
    cls._encoders = encoders
    if not codecs:
        return
    if issubclass(cls, Message):
        # One C call from encode(version) to the bytes and from decode(data, version) to the
        # object: for small messages the Python methods' own steps cost more than the work.
        cls.encode = native.encode_method(cls)  # type: ignore[method-assign]
        cls.decode = native.decode_method(cls)  # type: ignore[method-assign]
    if "__eq__" in vars(cls):
        # The compiled __eq__ compares the same slots as the generated one, without a
        # Python frame per struct (the fuzz compares millions of them).
        cls.__eq__ = native.eq_method  # type: ignore[method-assign]
    if table is None:
        return
    try:
        form = native.JsonForm(cls, table, codecs, cls._to_json, cls._from_json)
    except NotImplementedError:
        pass
    else:
        cls._to_json = staticmethod(form.to_json)  # type: ignore[method-assign]
        cls._from_json = staticmethod(form.from_json)  # type: ignore[method-assign]


def uses_native_json(cls: type[Struct], version: int) -> bool:
    """Whether ``cls`` at ``version`` converts to and from JSON through the accelerator."""
    form = getattr(cls._to_json, "__self__", None)
    return native is not None and isinstance(form, native.JsonForm) and version in form.versions()


def python_json(cls: type[Struct]) -> tuple[Callable[[Any, int], Any], Callable[[Any, int], Any]]:
    """``cls``'s generated Python to_json and from_json converters, with or without the
    accelerator in front of them (for comparisons and benchmarks)."""
    form = getattr(cls._to_json, "__self__", None)
    if native is not None and isinstance(form, native.JsonForm):
        return form.python_to_json, form.python_from_json
    return cls._to_json, cls._from_json


def uses_native(cls: type[Struct], version: int) -> bool:
    """Whether ``cls`` at ``version`` decodes and encodes through the accelerator."""
    return native is not None and all(
        isinstance(getattr(codecs.get(version), "__self__", None), native.Codec)
        for codecs in (cls._decoders, cls._encoders)
    )


def python_codecs(cls: type[Struct]) -> tuple[dict[int, Decoder], dict[int, Encoder]]:
    """``cls``'s generated Python decoders and encoders by version, with or without the
    accelerator in front of them (for comparisons and benchmarks)."""

    def python(fn: Any, name: str) -> Any:
        owner = getattr(fn, "__self__", None)
        return getattr(owner, name) if native and isinstance(owner, native.Codec) else fn

    return (
        {v: python(d, "python_decoder") for v, d in cls._decoders.items()},
        {v: python(e, "python_encoder") for v, e in cls._encoders.items()},
    )


def as_keyed(items: Iterable[T]) -> KeyedList[T]:
    return items if isinstance(items, KeyedList) else KeyedList(items)


def convert(value: Struct, cls: type[T]) -> T:
    """``value`` as an instance of ``cls``, another package's class of the same message:
    fields copied by attribute name, nested structs converted likewise, fields ``cls``
    does not have dropped and fields ``value`` does not have left at their defaults."""
    if type(value) is cls:
        return value
    out = cls()
    table = cls._field_table
    rows = table[1] if table is not None else [(a, None, None, None, None) for a in cls._fields]
    for attr, _key, _tagged, _nullable, sub in rows:
        if not hasattr(value, attr):
            continue
        item = getattr(value, attr)
        if sub is not None and item is not None:
            if isinstance(item, list):
                items = [convert(x, sub[0]) for x in item]
                item = KeyedList(items) if isinstance(getattr(out, attr), KeyedList) else items
            else:
                item = convert(item, sub[0])
        setattr(out, attr, item)
    return out


__all__ = [
    "new_instance",
    "Decoder",
    "Encoder",
    "KeyedList",
    "MISSING",
    "Message",
    "Missing",
    "Struct",
    "as_keyed",
    "bind_codecs",
    "bind_native",
    "convert",
]
