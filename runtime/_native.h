/* The accelerator's compiled plans, shared by its two extension modules.
 *
 * kafkagen.runtime._native compiles the generated layouts (plans) and field tables into
 * the structures below and serves the codecs and Kafka's JSON form from them. The fuzz's
 * random-message builder (kafkagen.fuzz._builders, tools/fuzz/_builders.c) walks the very
 * same compiled structures; it reaches the functions it needs through the capsule
 * kafkagen.runtime._native._C_API, so nothing of the fuzz is compiled into the runtime.
 * Both modules are built from one checkout (setup.py), and each carries the digest of its
 * sources, this header included, so a mismatched pair is refused at import.
 */
#ifndef KAFKAGEN_NATIVE_H
#define KAFKAGEN_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum {
    K_INT8, K_INT16, K_UINT16, K_INT32, K_UINT32, K_INT64, K_FLOAT64, K_BOOL,
    K_UUID, K_STRING, K_BYTES, K_STRUCT, K_ARRAY, K_ABSENT
};
enum { D_VALUE, D_LIST, D_KEYED, D_STRUCT };

typedef struct Prog Prog;

/* How to build a fresh default struct: its class and, per slot, share the default
 * instance's value, copy its list, or build a nested default struct. */
typedef struct Tmpl Tmpl;
typedef struct {
    Py_ssize_t off;
    int how; /* 0 share, 1 list copy, 2 nested struct */
    PyObject *value;
    Tmpl *sub;
} TmplSlot;
struct Tmpl {
    PyTypeObject *cls;
    Py_ssize_t n;
    TmplSlot *slots;
};

typedef struct {
    int kind;
    Py_ssize_t off;     /* slot offset in the object */
    int compact, nullable, view, keyed, ignorable;
    int elem;           /* arrays: element kind (K_INT8.. K_BYTES or K_STRUCT) */
    Prog *sub;          /* nested struct (struct fields, struct arrays) */
    int dkind;          /* default: how to build it (absent and tagged fields) */
    PyObject *dval;     /* D_VALUE: the shared value; D_STRUCT: the class */
    PyObject *dcmp;     /* what encode compares with */
    Tmpl *tmpl;         /* D_STRUCT: how to build the default without calling the class */
    uint32_t tag;
    int run;            /* fixed fields: bytes of the fused run it starts, 0 inside a run */
    int refuse_null;    /* None raises FieldUnsupported (the field is nullable elsewhere) */
    PyObject *name;     /* the spec name, in decode errors of arrays */
    PyObject *path;     /* "Struct.Field", in FieldUnsupported */
} Op;

/* A tag that a field of the struct has only at other versions: refused when read. */
typedef struct {
    uint32_t tag;
    PyObject *reason;   /* the DecodeError's reason, as wire.tag_of_other_version words it */
} OtherTag;

struct Prog {
    PyTypeObject *cls;
    int flexible;
    Py_ssize_t n_ops, n_tags, n_other;
    Op *ops;
    Op *tags;           /* sorted by tag */
    OtherTag *other;
    Py_ssize_t unknown_off;
    PyObject *qualname; /* the struct's name in FieldUnsupported */
    Py_ssize_t last_size; /* a message's last encoding: the room its next one starts with */
};

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static inline void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject *old = SLOT(o, off);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* ------------------------------------------------------------------ field tables */

/* The generator emits one table per struct: (class, fields, first free tag), the fields in
 * spec order as (attribute, JSON key, tagged, ever nullable, nested table). Paired with a
 * layout's plan, whose op of each field says whether the version has it and of what kind
 * it is, it is compiled into a JProg, which serves Kafka's JSON form (JsonForm here) and
 * the fuzz's random messages drawn in spec order (RandomBuilder in kafkagen.fuzz). */

typedef struct JProg JProg;

typedef struct {
    PyObject *key;   /* the JSON key, interned */
    Op *op;          /* this layout's op of the field (K_ABSENT: not at this version) */
    int tagged;      /* written only when it differs from its default; may be missing */
    int nullable;    /* null is allowed whenever some version allows it */
    JProg *sub;      /* nested structs and struct arrays */
} JField;

struct JProg {
    Prog *prog;
    Py_ssize_t n;
    JField *fields;
    long long first_free; /* the first tag no field of the struct uses */
};

/* What kafkagen.runtime._native lends its sibling modules, through the capsule
 * kafkagen.runtime._native._C_API. */
#define KAFKAGEN_NATIVE_API_VERSION 1
typedef struct {
    int version; /* KAFKAGEN_NATIVE_API_VERSION */
    const char *const *kind_names; /* K_* -> the plans' kind names */
    PyTypeObject **keyed_type;     /* KeyedList, once configure() ran */
    PyTypeObject **uuid_type;      /* uuid.UUID */
    /* NotImplementedError "native codecs do not support <what>"; returns -1 */
    int (*unsupported_plan)(const char *what);
    Py_ssize_t (*slot_offset)(PyTypeObject *cls, PyObject *name);
    PyObject *(*make_uuid)(const unsigned char *big_endian16);
    PyObject *(*new_default)(Op *op); /* a fresh default of an absent or tagged field */
    /* cls's field table compiled against each {version: Codec}: an array indexed by
     * version (NULL where a layout did not compile or ``usable`` refused it), its length
     * in *n_versions; NULL with NotImplementedError when no version compiles. */
    JProg **(*table_programs)(PyObject *cls, PyObject *table, PyObject *codecs,
                              Py_ssize_t *n_versions, int (*usable)(JProg *));
} KafkagenNativeAPI;

#endif
