/* Table-driven accelerator under the generated codecs.
 *
 * The generator emits, per struct and wire layout, a plan: a tuple of plain Python data
 * (field kinds, slot names, flags, defaults, nested plans). Codec(cls, plan, dec, enc)
 * compiles it once into C arrays and offers decode(buf, pos, end) -> (obj, pos) and
 * encode(obj, w), with the same signatures as the generated Python functions.
 *
 * Failures are raised here, with the Python codecs' exact errors, so a failing call costs
 * no more than a succeeding one:
 * - invalid input raises kafkagen.runtime.errors.DecodeError(reason, offset=...) with the
 *   reason and offset the Python layout decoder's failure leads to (each reader of
 *   runtime/wire.py is mirrored check by check; a truncated run of fixed-width fields is
 *   reported at the run's start, whose size the plan carries);
 * - a value the layout cannot carry (a non-default value in a field absent there, null in
 *   a field not nullable there, unknown tagged fields at a version that is not flexible)
 *   raises the FieldUnsupported that runtime/wire.py's unsupported() builds, with the
 *   plan's spec path.
 * The C side still gives up without raising, and runs the Python codec of the same layout,
 * for what it declines by design: values of the wrong type or range (Python raises its
 * own TypeError, struct.error... there), comparisons that raise, buffers other than flat
 * byte buffers, more than 64 unknown tagged fields, and allocation failures. The Python
 * codec then raises its error or produces the result, so both modes agree.
 *
 * Each struct also has a field table (its fields in spec order with their JSON keys, and
 * its first free tag), which, paired with a layout's plan, gives Kafka's JSON form
 * (JsonForm). The compiled plans and tables are declared in _native.h and lent, through
 * the capsule _C_API, to the fuzz's random-message builder (kafkagen.fuzz._builders),
 * which walks them; no random code lives here.
 */
#include "_native.h"
#include <structmember.h>
#include <stdarg.h>
#include <string.h>

/* ------------------------------------------------------------------ module state */

static PyTypeObject *uuid_type;      /* uuid.UUID */
static Py_ssize_t uuid_int_off = -1; /* slot offsets of UUID.int and UUID.is_safe */
static Py_ssize_t uuid_safe_off = -1;
static PyObject *uuid_unknown;       /* uuid.SafeUUID.unknown */
static PyTypeObject *keyed_type;     /* KeyedList, set by configure() */
static PyObject *empty_list;         /* compared against, never mutated */
static PyTypeObject *struct_base;    /* kafkagen.runtime.message.Struct, set by configure() */
static PyObject *decode_error;       /* kafkagen.runtime.errors.DecodeError, set by configure() */
static PyObject *unsupported_fn;     /* kafkagen.runtime.wire.unsupported, set by configure() */
static PyObject *why_default, *why_null, *why_tags; /* unsupported()'s reasons */

/* Every class with a compiled plan: a set of pointers, open addressing. */
static PyTypeObject **plan_table;
static size_t plan_cap, plan_n;

static int is_plan_class(PyTypeObject *t) {
    if (plan_cap == 0) return 0;
    size_t i = ((uintptr_t)t >> 4) & (plan_cap - 1);
    while (plan_table[i] != NULL) {
        if (plan_table[i] == t) return 1;
        i = (i + 1) & (plan_cap - 1);
    }
    return 0;
}

static int add_plan_class(PyTypeObject *t) {
    if (is_plan_class(t)) return 0;
    if ((plan_n + 1) * 2 > plan_cap) {
        size_t cap = plan_cap ? plan_cap * 2 : 256;
        PyTypeObject **table = PyMem_Calloc(cap, sizeof(PyTypeObject *));
        if (table == NULL) { PyErr_NoMemory(); return -1; }
        for (size_t j = 0; j < plan_cap; j++) {
            PyTypeObject *u = plan_table[j];
            if (u == NULL) continue;
            size_t i = ((uintptr_t)u >> 4) & (cap - 1);
            while (table[i] != NULL) i = (i + 1) & (cap - 1);
            table[i] = u;
        }
        PyMem_Free(plan_table);
        plan_table = table;
        plan_cap = cap;
    }
    size_t i = ((uintptr_t)t >> 4) & (plan_cap - 1);
    while (plan_table[i] != NULL) i = (i + 1) & (plan_cap - 1);
    plan_table[i] = (PyTypeObject *)Py_NewRef(t);
    plan_n++;
    return 0;
}
static PyObject *programs;           /* id(plan) -> capsule of its Prog, plus the plan */
static unsigned long long n_fallbacks; /* calls the C side handed to Python */

/* ------------------------------------------------------------------ compiled plans */

static const char *KIND_NAMES[] = {
    "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool",
    "uuid", "string", "bytes", "struct", "array", "absent", NULL
};
static const int FIXED_SIZE[] = {1, 2, 2, 4, 4, 8, 8, 1};

static int kind_of(PyObject *name) {
    if (!PyUnicode_Check(name)) return -1;
    for (int i = 0; KIND_NAMES[i]; i++)
        if (PyUnicode_CompareWithASCIIString(name, KIND_NAMES[i]) == 0) return i;
    return -1;
}

static int unsupported_plan(const char *what) {
    PyErr_Format(PyExc_NotImplementedError, "native codecs do not support %s", what);
    return -1;
}

/* The offset of a __slots__ member of cls, found through its member descriptor. */
static Py_ssize_t slot_offset(PyTypeObject *cls, PyObject *name) {
    PyObject *d = PyObject_GetAttr((PyObject *)cls, name);
    if (d == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        d = Py_NewRef(Py_None); /* reported below as not a slot */
    }
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) off = m->offset;
    }
    Py_DECREF(d);
    if (off < 0) PyErr_Format(PyExc_NotImplementedError, "%R is not a writable slot", name);
    return off;
}

static Prog *compile_plan(PyObject *plan);

static int flag(PyObject *t, Py_ssize_t i) {
    return PyObject_IsTrue(PyTuple_GET_ITEM(t, i));
}

/* The template of a struct's default instance ``d`` (which is never mutated). */
static Tmpl *make_tmpl(PyObject *d) {
    PyTypeObject *t = Py_TYPE(d);
    Py_ssize_t n = 0;
    for (PyTypeObject *b = t; b != NULL && b != &PyBaseObject_Type; b = b->tp_base)
        for (PyMemberDef *m = b->tp_members; m != NULL && m->name != NULL; m++)
            if (m->type == T_OBJECT_EX) n++;
    Tmpl *tm = PyMem_Calloc(1, sizeof(Tmpl));
    TmplSlot *slots = PyMem_Calloc(n + 1, sizeof(TmplSlot));
    if (tm == NULL || slots == NULL) { PyErr_NoMemory(); return NULL; }
    tm->cls = (PyTypeObject *)Py_NewRef(t);
    tm->slots = slots;
    for (PyTypeObject *b = t; b != NULL && b != &PyBaseObject_Type; b = b->tp_base) {
        for (PyMemberDef *m = b->tp_members; m != NULL && m->name != NULL; m++) {
            if (m->type != T_OBJECT_EX) continue;
            PyObject *v = *(PyObject **)((char *)d + m->offset);
            if (v == NULL) {
                unsupported_plan("a default with unset slots");
                return NULL;
            }
            TmplSlot *ts = &slots[tm->n++];
            ts->off = m->offset;
            ts->value = Py_NewRef(v);
            if (PyList_Check(v)) {
                ts->how = 1;
            } else if (PyObject_TypeCheck(v, struct_base)) {
                ts->how = 2;
                if ((ts->sub = make_tmpl(v)) == NULL) return NULL;
            }
        }
    }
    return tm;
}

static int compile_default(Op *op, PyObject *d) {
    if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) < 1) return unsupported_plan("a default");
    PyObject *k = PyTuple_GET_ITEM(d, 0);
    if (PyUnicode_CompareWithASCIIString(k, "value") == 0 && PyTuple_GET_SIZE(d) == 2) {
        op->dkind = D_VALUE;
        op->dval = Py_NewRef(PyTuple_GET_ITEM(d, 1));
        op->dcmp = Py_NewRef(op->dval);
    } else if (PyUnicode_CompareWithASCIIString(k, "list") == 0) {
        op->dkind = D_LIST;
        op->dcmp = Py_NewRef(empty_list);
    } else if (PyUnicode_CompareWithASCIIString(k, "keyed") == 0) {
        if (keyed_type == NULL) return unsupported_plan("keyed arrays before configure()");
        op->dkind = D_KEYED;
        op->dcmp = Py_NewRef(empty_list);
    } else if (PyUnicode_CompareWithASCIIString(k, "struct") == 0 && PyTuple_GET_SIZE(d) == 3) {
        op->dkind = D_STRUCT;
        op->dval = Py_NewRef(PyTuple_GET_ITEM(d, 1));
        op->dcmp = Py_NewRef(PyTuple_GET_ITEM(d, 2));
        if (struct_base == NULL) return unsupported_plan("struct defaults before configure()");
        /* Built like calling the class would, from its shared default instance. */
        if ((PyObject *)Py_TYPE(op->dcmp) != op->dval || !PyObject_TypeCheck(op->dcmp, struct_base))
            return unsupported_plan("a struct default of another class");
        if ((op->tmpl = make_tmpl(op->dcmp)) == NULL) return -1;
    } else {
        return unsupported_plan("this kind of default");
    }
    return 0;
}

/* The spec name at item i of op t, and the path "qualname.name" errors of encoding use. */
static int compile_name(Op *op, PyObject *t, Py_ssize_t i, PyObject *qualname) {
    PyObject *name = PyTuple_GET_ITEM(t, i);
    if (!PyUnicode_Check(name)) return unsupported_plan("a field name that is not a str");
    op->name = Py_NewRef(name);
    op->path = PyUnicode_FromFormat("%U.%U", qualname, name);
    return op->path == NULL ? -1 : 0;
}

static int compile_op(PyTypeObject *cls, Op *op, PyObject *t, PyObject *qualname) {
    memset(op, 0, sizeof(*op));
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) return unsupported_plan("a malformed op");
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    int kind = kind_of(PyTuple_GET_ITEM(t, 0));
    if (kind < 0) return unsupported_plan("an unknown op kind");
    op->kind = kind;
    op->off = slot_offset(cls, PyTuple_GET_ITEM(t, 1));
    if (op->off < 0) return -1;
    switch (kind) {
    case K_STRING:
        if (n != 6) return unsupported_plan("a malformed string op");
        op->compact = flag(t, 2);
        op->nullable = flag(t, 3);
        op->refuse_null = flag(t, 5);
        return compile_name(op, t, 4, qualname);
    case K_BYTES:
        if (n != 7) return unsupported_plan("a malformed bytes op");
        op->compact = flag(t, 2);
        op->nullable = flag(t, 3);
        op->view = flag(t, 4);
        op->refuse_null = flag(t, 6);
        return compile_name(op, t, 5, qualname);
    case K_STRUCT:
        if (n != 6) return unsupported_plan("a malformed struct op");
        op->nullable = flag(t, 2);
        op->sub = compile_plan(PyTuple_GET_ITEM(t, 3));
        if (op->sub == NULL) return -1;
        op->refuse_null = flag(t, 5);
        return compile_name(op, t, 4, qualname);
    case K_ARRAY: {
        if (n != 7) return unsupported_plan("a malformed array op");
        op->compact = flag(t, 2);
        op->nullable = flag(t, 3);
        PyObject *el = PyTuple_GET_ITEM(t, 4);
        op->keyed = flag(t, 5);
        if (op->keyed && keyed_type == NULL)
            return unsupported_plan("keyed arrays before configure()");
        if (PyTuple_Check(el)) {
            op->elem = K_STRUCT;
            op->sub = compile_plan(el);
            if (op->sub == NULL) return -1;
        } else {
            op->elem = kind_of(el);
            if (op->elem < 0 || op->elem > K_BYTES) return unsupported_plan("this array element");
        }
        return compile_name(op, t, 6, qualname);
    }
    case K_ABSENT:
        if (n != 5) return unsupported_plan("a malformed absent op");
        if (compile_default(op, PyTuple_GET_ITEM(t, 2)) < 0) return -1;
        op->ignorable = flag(t, 3);
        return compile_name(op, t, 4, qualname);
    case K_UUID:
        if (n != 2) return unsupported_plan("a malformed uuid op");
        break;
    default: {
        if (n != 3) return unsupported_plan("a malformed fixed op");
        long run = PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        if (run == -1 && PyErr_Occurred()) return -1;
        if (run < 0 || run > 0xFFFF) return unsupported_plan("a fixed run of this size");
        op->run = (int)run;
    }
    }
    return 0;
}

/* plan = (cls, flexible, ops, tags, qualname, other); tags = ((tag, op, default), ...)
 * sorted by tag; qualname names the struct in errors ("Message" or "Message.Struct");
 * other = ((tag, field path, versions), ...): the tags its fields have only at other
 * versions, which a read refuses. */
static Prog *compile_plan(PyObject *plan) {
    PyObject *key = PyLong_FromVoidPtr(plan);
    if (key == NULL) return NULL;
    PyObject *known = PyDict_GetItemWithError(programs, key);
    if (known != NULL) {
        Py_DECREF(key);
        return (Prog *)PyCapsule_GetPointer(PyTuple_GET_ITEM(known, 1), NULL);
    }
    if (PyErr_Occurred()) goto error_key;
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 6 ||
        !PyType_Check(PyTuple_GET_ITEM(plan, 0)) || !PyTuple_Check(PyTuple_GET_ITEM(plan, 2)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(plan, 3)) || !PyUnicode_Check(PyTuple_GET_ITEM(plan, 4)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(plan, 5))) {
        unsupported_plan("a malformed plan");
        goto error_key;
    }
    PyTypeObject *cls = (PyTypeObject *)PyTuple_GET_ITEM(plan, 0);
    PyObject *ops = PyTuple_GET_ITEM(plan, 2), *tags = PyTuple_GET_ITEM(plan, 3);
    PyObject *other = PyTuple_GET_ITEM(plan, 5);
    /* Programs live as long as the process, like the generated modules that own them. */
    Prog *p = PyMem_Calloc(1, sizeof(Prog));
    if (p == NULL) { PyErr_NoMemory(); goto error_key; }
    p->cls = (PyTypeObject *)Py_NewRef(cls);
    p->qualname = Py_NewRef(PyTuple_GET_ITEM(plan, 4));
    p->flexible = flag(plan, 1);
    p->n_ops = PyTuple_GET_SIZE(ops);
    p->n_tags = PyTuple_GET_SIZE(tags);
    p->n_other = PyTuple_GET_SIZE(other);
    p->ops = PyMem_Calloc(p->n_ops + 1, sizeof(Op));
    p->tags = PyMem_Calloc(p->n_tags + 1, sizeof(Op));
    p->other = PyMem_Calloc(p->n_other + 1, sizeof(OtherTag));
    if (p->ops == NULL || p->tags == NULL || p->other == NULL) {
        PyErr_NoMemory();
        goto error_key;
    }
    PyObject *unk = PyUnicode_FromString("unknown_tagged_fields");
    if (unk == NULL) goto error_key;
    p->unknown_off = slot_offset(cls, unk);
    Py_DECREF(unk);
    if (p->unknown_off < 0) goto error_key;
    for (Py_ssize_t i = 0; i < p->n_ops; i++)
        if (compile_op(cls, &p->ops[i], PyTuple_GET_ITEM(ops, i), p->qualname) < 0) goto error_key;
    for (Py_ssize_t i = 0; i < p->n_tags; i++) {
        PyObject *t = PyTuple_GET_ITEM(tags, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
            unsupported_plan("a malformed tagged field");
            goto error_key;
        }
        Op *op = &p->tags[i];
        if (compile_op(cls, op, PyTuple_GET_ITEM(t, 1), p->qualname) < 0) goto error_key;
        if (op->kind == K_ABSENT) { unsupported_plan("an absent tagged op"); goto error_key; }
        unsigned long tag = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(t, 0));
        if (PyErr_Occurred() || tag > 0xFFFFFFFFUL || (i > 0 && tag <= p->tags[i - 1].tag)) {
            PyErr_Clear();
            unsupported_plan("tags out of order or range");
            goto error_key;
        }
        op->tag = (uint32_t)tag;
        if (compile_default(op, PyTuple_GET_ITEM(t, 2)) < 0) goto error_key;
    }
    for (Py_ssize_t i = 0; i < p->n_other; i++) {
        PyObject *t = PyTuple_GET_ITEM(other, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(t, 1)) || !PyUnicode_Check(PyTuple_GET_ITEM(t, 2))) {
            unsupported_plan("a malformed tag of other versions");
            goto error_key;
        }
        unsigned long tag = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(t, 0));
        if (PyErr_Occurred() || tag > 0xFFFFFFFFUL) {
            PyErr_Clear();
            unsupported_plan("a tag of other versions out of range");
            goto error_key;
        }
        p->other[i].tag = (uint32_t)tag;
        p->other[i].reason = PyUnicode_FromFormat(
            "tagged field %lu (%U) exists only at versions %U", tag, PyTuple_GET_ITEM(t, 1),
            PyTuple_GET_ITEM(t, 2));
        if (p->other[i].reason == NULL) goto error_key;
    }
    if (add_plan_class(cls) < 0) goto error_key;
    PyObject *cap = PyCapsule_New(p, NULL, NULL);
    if (cap == NULL) goto error_key;
    PyObject *entry = PyTuple_Pack(2, plan, cap);
    Py_DECREF(cap);
    if (entry == NULL || PyDict_SetItem(programs, key, entry) < 0) {
        Py_XDECREF(entry);
        goto error_key;
    }
    Py_DECREF(entry);
    Py_DECREF(key);
    return p;
error_key:
    /* A half-built Prog is leaked on purpose: it only happens once per unsupported plan. */
    Py_DECREF(key);
    return NULL;
}

/* ------------------------------------------------------------------ generated structs */


/* A fresh default struct, as calling its class builds it: lists and nested structs new,
 * immutable values shared. */
static PyObject *build_default(Tmpl *tm) {
    PyObject *o = tm->cls->tp_alloc(tm->cls, 0);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < tm->n; i++) {
        TmplSlot *ts = &tm->slots[i];
        PyObject *c;
        if (ts->how == 0) {
            c = Py_NewRef(ts->value);
        } else if (ts->how == 1) {
            PyTypeObject *lt = Py_TYPE(ts->value);
            c = lt == &PyList_Type ? PyList_New(0) : lt->tp_alloc(lt, 0);
            if (c != NULL && PyList_GET_SIZE(ts->value) > 0 &&
                PyList_SetSlice(c, 0, 0, ts->value) < 0)
                Py_CLEAR(c);
        } else {
            c = build_default(ts->sub);
        }
        if (c == NULL) { Py_DECREF(o); return NULL; }
        SLOT(o, ts->off) = c;
    }
    return o;
}

static int differs(PyObject *v, PyObject *d);

/* `a == b` for two instances of one generated class, field by field as its __eq__
 * does, without a Python call per struct. 1 equal, 0 not, -1 error. */
static int struct_equal(PyObject *a, PyObject *b) {
    PyTypeObject *t = Py_TYPE(a);
    for (PyTypeObject *k = t; k != NULL && k != &PyBaseObject_Type; k = k->tp_base) {
        for (PyMemberDef *m = k->tp_members; m != NULL && m->name != NULL; m++) {
            if (m->type != T_OBJECT_EX) continue;
            PyObject *x = SLOT(a, m->offset), *y = SLOT(b, m->offset);
            if (x == NULL || y == NULL) return -1;
            int r = differs(x, y);
            if (r != 0) return r < 0 ? -1 : 0;
        }
    }
    return 1;
}

/* `v != d` as Python's operator computes it (no identity shortcut, for NaN's sake, but for
 * types whose object always equals itself: a list or tuple compares its items with one,
 * so even one holding a NaN does; the empty tuple of unknown tags is the common case). */
static int differs(PyObject *v, PyObject *d) {
    if (v == d && (PyLong_CheckExact(v) || PyUnicode_CheckExact(v) || v == Py_None ||
                   PyBool_Check(v) || PyBytes_CheckExact(v) || PyTuple_CheckExact(v) ||
                   PyList_CheckExact(v) || Py_IS_TYPE(v, keyed_type)))
        return 0;
    if (Py_TYPE(v) == Py_TYPE(d) && is_plan_class(Py_TYPE(v))) {
        Py_INCREF(v);
        Py_INCREF(d);
        int eq = struct_equal(v, d);
        Py_DECREF(v);
        Py_DECREF(d);
        if (eq >= 0) return !eq;
        PyErr_Clear(); /* an unset slot: let Python's own comparison decide */
    }
    if (Py_IS_TYPE(v, uuid_type) && Py_IS_TYPE(d, uuid_type)) {
        /* UUID.__eq__ compares the ints; without its Python frame here. */
        PyObject *x = SLOT(v, uuid_int_off), *y = SLOT(d, uuid_int_off);
        if (x != NULL && y != NULL) {
            v = x;
            d = y;
        }
    }
    PyObject *r = PyObject_RichCompare(v, d, Py_NE);
    if (r == NULL) return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* __eq__ of the generated classes: what their Python __eq__ computes (NotImplemented
 * unless `other` is an instance of self's class, then every slot compared), with
 * no Python frame per struct; list comparisons reach it for each item. */
static PyObject *struct_eq(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "struct_eq(self, other)");
        return NULL;
    }
    PyObject *a = args[0], *b = args[1];
    if (!PyObject_TypeCheck(b, Py_TYPE(a))) Py_RETURN_NOTIMPLEMENTED;
    PyTypeObject *t = Py_TYPE(a);
    for (PyTypeObject *k = t; k != NULL && k != &PyBaseObject_Type; k = k->tp_base) {
        for (PyMemberDef *m = k->tp_members; m != NULL && m->name != NULL; m++) {
            if (m->type != T_OBJECT_EX) continue;
            PyObject *x = SLOT(a, m->offset), *y = SLOT(b, m->offset);
            if (x == NULL || y == NULL) {
                PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%s'",
                             t->tp_name, m->name);
                return NULL;
            }
            int r = differs(x, y);
            if (r < 0) return NULL;
            if (r) Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

/* ------------------------------------------------------------------ decoding */

typedef struct {
    const unsigned char *buf;
    Py_ssize_t len;  /* the whole buffer: fused fixed-width reads are checked against it */
    PyObject *bufobj;
    PyObject *view;  /* memoryview(bufobj), made on the first zero-copy field */
    int raised;      /* a DecodeError is set: it propagates, no fall-back */
} DCtx;

/* Raise DecodeError(reason, offset=at) as the wire readers do. Returns -1. */
static int dec_fail(DCtx *c, Py_ssize_t at, const char *format, ...) {
    va_list va;
    va_start(va, format);
    PyObject *reason = PyUnicode_FromFormatV(format, va);
    va_end(va);
    if (reason == NULL) return -1;
    PyObject *e = PyObject_CallFunction(decode_error, "Osin", reason, "", -1, at);
    Py_DECREF(reason);
    if (e == NULL) return -1;
    PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_DECREF(e);
    c->raised = 1;
    return -1;
}

/* wire._short: a length or count larger than what is left. */
static int dec_short(DCtx *c, const char *what, PyObject *name, Py_ssize_t n, Py_ssize_t pos,
                     Py_ssize_t end) {
    if (name != NULL)
        return dec_fail(c, pos, "array %U of length %zd exceeds the %zd bytes left", name, n,
                        end - pos);
    return dec_fail(c, pos, "%s of length %zd exceeds the %zd bytes left", what, n, end - pos);
}


/* An unsigned varint as Kafka reads them: at most 5 bytes, at most 32 bits (the checks and
 * offsets of wire.read_uvarint). */
static inline int read_uvarint(DCtx *c, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out) {
    const unsigned char *b = c->buf;
    Py_ssize_t p = *pos, start = p;
    if (p >= end) return dec_fail(c, p, "varint runs past the end");
    unsigned char x = b[p++];
    uint64_t v = x & 0x7F;
    for (int shift = 7; x >= 0x80; shift += 7) {
        if (shift > 28) return dec_fail(c, start, "varint longer than 5 bytes");
        if (p >= end) return dec_fail(c, start, "varint runs past the end");
        x = b[p++];
        v |= (uint64_t)(x & 0x7F) << shift;
    }
    if (v > 0xFFFFFFFFULL) return dec_fail(c, start, "varint exceeds 32 bits");
    *pos = p;
    *out = v;
    return 0;
}

static PyObject *dec_struct(DCtx *c, Prog *p, Py_ssize_t *pos, Py_ssize_t end);

static PyObject *make_uuid(const unsigned char *b) {
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) hi = hi << 8 | b[i];
    for (int i = 8; i < 16; i++) lo = lo << 8 | b[i];
    PyObject *value;
    if (hi == 0) {
        value = PyLong_FromUnsignedLongLong(lo);
    } else {
        PyObject *h = PyLong_FromUnsignedLongLong(hi), *l = PyLong_FromUnsignedLongLong(lo);
        PyObject *sixty_four = PyLong_FromLong(64);
        PyObject *shifted = (h && sixty_four) ? PyNumber_Lshift(h, sixty_four) : NULL;
        value = (shifted && l) ? PyNumber_Or(shifted, l) : NULL;
        Py_XDECREF(h);
        Py_XDECREF(l);
        Py_XDECREF(sixty_four);
        Py_XDECREF(shifted);
    }
    if (value == NULL) return NULL;
    PyObject *u = uuid_type->tp_alloc(uuid_type, 0);
    if (u == NULL) { Py_DECREF(value); return NULL; }
    SLOT(u, uuid_int_off) = value;
    SLOT(u, uuid_safe_off) = Py_NewRef(uuid_unknown);
    return u;
}

static PyObject *new_default(Op *op) {
    switch (op->dkind) {
    case D_VALUE: return Py_NewRef(op->dval);
    case D_LIST: return PyList_New(0);
    case D_KEYED: return keyed_type->tp_alloc(keyed_type, 0);
    default: return build_default(op->tmpl);
    }
}

static PyObject *dec_fixed(int kind, const unsigned char *b) {
    switch (kind) {
    case K_INT8: return PyLong_FromLong((signed char)b[0]);
    case K_INT16: return PyLong_FromLong((int16_t)(b[0] << 8 | b[1]));
    case K_UINT16: return PyLong_FromLong(b[0] << 8 | b[1]);
    case K_INT32:
        return PyLong_FromLong((int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
                                         (uint32_t)b[2] << 8 | b[3]));
    case K_UINT32:
        return PyLong_FromUnsignedLong((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
                                       (uint32_t)b[2] << 8 | b[3]);
    case K_INT64:
    case K_FLOAT64: {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) v = v << 8 | b[i];
        if (kind == K_INT64) return PyLong_FromLongLong((int64_t)v);
        double d;
        memcpy(&d, &v, 8);
        return PyFloat_FromDouble(d);
    }
    default: return Py_NewRef(b[0] ? Py_True : Py_False);
    }
}

enum { W_STRING, W_BYTES, W_RECORDS };
static const char *WHAT[] = {"string", "bytes", "records"};

/* The length prefix of a string, bytes or records value, checked as wire._sized checks it:
 * the length, -1 for null, or -2 with the error raised (``return (dec_fail(...), -2)``). */
static Py_ssize_t read_length(DCtx *c, Py_ssize_t *pos, Py_ssize_t end, int compact,
                              int nullable, int what) {
    const unsigned char *b = c->buf;
    Py_ssize_t start = *pos, n;
    if (compact) {
        uint64_t v = 0;
        if (read_uvarint(c, pos, end, &v) < 0) return -2;
        n = (Py_ssize_t)v - 1;
    } else if (what == W_STRING) {
        if (*pos + 2 > end) return (dec_fail(c, *pos, "truncated length"), -2);
        n = (int16_t)(b[*pos] << 8 | b[*pos + 1]);
        *pos += 2;
    } else {
        if (*pos + 4 > end) return (dec_fail(c, *pos, "truncated length"), -2);
        const unsigned char *q = b + *pos;
        n = (int32_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]);
        *pos += 4;
    }
    if (n < 0) {
        if (n != -1) return (dec_fail(c, start, "negative %s length %zd", WHAT[what], n), -2);
        if (!nullable)
            return (dec_fail(c, start, "%s is null but not nullable at this version",
                             WHAT[what]), -2);
        return -1;
    }
    if (n > end - *pos) return (dec_short(c, WHAT[what], NULL, n, *pos, end), -2);
    if (n > 0x7FFF && what == W_STRING)
        return (dec_fail(c, start, "string length %zd is longer than 32767", n), -2);
    return n;
}

/* An array's item count, checked as wire._array_count checks it: the count, -1 for null,
 * or -2 with the error raised. */
static Py_ssize_t read_count(DCtx *c, Op *op, Py_ssize_t *pos, Py_ssize_t end) {
    const unsigned char *b = c->buf;
    Py_ssize_t start = *pos, n;
    if (op->compact) {
        uint64_t v = 0;
        if (read_uvarint(c, pos, end, &v) < 0) return -2;
        n = (Py_ssize_t)v - 1;
    } else {
        if (*pos + 4 > end) return (dec_fail(c, *pos, "truncated length"), -2);
        const unsigned char *q = b + *pos;
        n = (int32_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]);
        *pos += 4;
    }
    if (n < 0) {
        if (n == -1 && op->nullable) return -1;
        if (n == -1)
            return (dec_fail(c, start, "array %U is null but not nullable at this version",
                             op->name), -2);
        return (dec_fail(c, start, "array %U is of length %zd", op->name, n), -2);
    }
    if (n > end - *pos) return (dec_short(c, NULL, op->name, n, *pos, end), -2);
    return n;
}

/* A str from n bytes of UTF-8 at start; invalid UTF-8 is reported at the bad byte, with
 * the codec's own reason, as Message.decode reports the UnicodeDecodeError. */
static PyObject *dec_utf8(DCtx *c, Py_ssize_t start, Py_ssize_t n) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)c->buf + start, n, NULL);
    if (s != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return s;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_ssize_t at;
    PyObject *why = NULL;
    if (value != NULL && PyUnicodeDecodeError_GetStart(value, &at) == 0 &&
        (why = PyUnicodeDecodeError_GetReason(value)) != NULL)
        dec_fail(c, start + at, "invalid UTF-8 in a string: %U", why);
    Py_XDECREF(why);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
}

static PyObject *dec_string(DCtx *c, Py_ssize_t *pos, Py_ssize_t end, int compact,
                            int nullable) {
    const unsigned char *b = c->buf;
    Py_ssize_t p = *pos;
    if (compact && p < end && b[p] > 0 && b[p] < 0x80 && p + b[p] <= end) { /* fast path */
        Py_ssize_t n = b[p] - 1;
        PyObject *s = dec_utf8(c, p + 1, n);
        if (s) *pos = p + 1 + n;
        return s;
    }
    Py_ssize_t n = read_length(c, &p, end, compact, nullable, W_STRING);
    if (n == -2) return NULL;
    if (n == -1) { *pos = p; return Py_NewRef(Py_None); }
    PyObject *s = dec_utf8(c, p, n);
    if (s) *pos = p + n;
    return s;
}

/* memoryview(buf)[start:start + n], as records and zeroCopy bytes are: a view sharing
 * the input's managed buffer, sliced by setting its bounds (the slicing protocol would
 * build and parse a slice object per field). */
static PyObject *sub_view(DCtx *c, Py_ssize_t start, Py_ssize_t n) {
    if (c->view == NULL && (c->view = PyMemoryView_FromObject(c->bufobj)) == NULL)
        return NULL;
    Py_buffer *b = &((PyMemoryViewObject *)c->view)->view;
    if (b->ndim != 1 || b->itemsize != 1 || b->suboffsets != NULL || b->shape == NULL ||
        (b->strides != NULL && b->strides[0] != 1))
        return PySequence_GetSlice(c->view, start, start + n);
    PyObject *v = PyMemoryView_FromObject(c->view);
    if (v == NULL) return NULL;
    Py_buffer *s = &((PyMemoryViewObject *)v)->view;
    s->buf = (char *)b->buf + start;
    s->len = n;
    s->shape[0] = n;
    return v;
}

static PyObject *dec_bytes(DCtx *c, Py_ssize_t *pos, Py_ssize_t end, int compact, int nullable,
                           int view) {
    Py_ssize_t p = *pos;
    Py_ssize_t n = read_length(c, &p, end, compact, nullable, view ? W_RECORDS : W_BYTES);
    if (n == -2) return NULL;
    if (n == -1) { *pos = p; return Py_NewRef(Py_None); }
    PyObject *v;
    if (view) {
        v = sub_view(c, p, n);
    } else {
        v = PyBytes_FromStringAndSize((const char *)c->buf + p, n);
    }
    if (v) *pos = p + n;
    return v;
}

static PyObject *dec_uuid(DCtx *c, Py_ssize_t *pos, Py_ssize_t end) {
    if (*pos + 16 > end) {
        dec_fail(c, *pos, "truncated uuid");
        return NULL;
    }
    PyObject *v = make_uuid(c->buf + *pos);
    if (v) *pos += 16;
    return v;
}

static PyObject *dec_value(DCtx *c, Op *op, Py_ssize_t *pos, Py_ssize_t end);

static PyObject *dec_array(DCtx *c, Op *op, Py_ssize_t *pos, Py_ssize_t end) {
    Py_ssize_t p = *pos;
    Py_ssize_t n = read_count(c, op, &p, end);
    if (n == -2) return NULL;
    if (n == -1) { *pos = p; return Py_NewRef(Py_None); }
    int el = op->elem;
    if (el <= K_BOOL && n * FIXED_SIZE[el] > end - p) {
        dec_short(c, NULL, op->name, n, p, end);
        return NULL;
    }
    /* Up front only when the count is small or the items are fixed-width (the count is then
     * backed by bytes already): a corrupt count never reserves more than the items read. */
    int append = op->keyed || (n > 256 && el > K_BOOL);
    PyObject *list;
    if (op->keyed) {
        list = keyed_type->tp_alloc(keyed_type, 0);
    } else {
        list = PyList_New(append ? 0 : n);
    }
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v;
        if (el <= K_BOOL) {
            v = dec_fixed(el, c->buf + p);
            p += FIXED_SIZE[el];
        } else if (el == K_STRUCT) {
            v = dec_struct(c, op->sub, &p, end);
        } else if (el == K_UUID) {
            v = dec_uuid(c, &p, end);
        } else if (el == K_STRING) {
            v = dec_string(c, &p, end, op->compact, 0);
        } else {
            v = dec_bytes(c, &p, end, op->compact, 0, 0);
        }
        if (v == NULL) { Py_DECREF(list); return NULL; }
        if (append) {
            int r = PyList_Append(list, v);
            Py_DECREF(v);
            if (r < 0) { Py_DECREF(list); return NULL; }
        } else {
            PyList_SET_ITEM(list, i, v);
        }
    }
    *pos = p;
    return list;
}

static PyObject *dec_value(DCtx *c, Op *op, Py_ssize_t *pos, Py_ssize_t end) {
    int k = op->kind;
    if (k <= K_BOOL) {
        /* The Python decoder unpacks a fused run with one struct.unpack_from on the whole
         * buffer (not up to end): a short buffer fails at the run's start. */
        if (op->run && *pos + op->run > c->len) {
            dec_fail(c, *pos, "truncated: fixed-width fields run past the end (%zd bytes left)",
                     c->len - *pos);
            return NULL;
        }
        PyObject *v = dec_fixed(k, c->buf + *pos);
        *pos += FIXED_SIZE[k];
        return v;
    }
    switch (k) {
    case K_UUID: return dec_uuid(c, pos, end);
    case K_STRING: return dec_string(c, pos, end, op->compact, op->nullable);
    case K_BYTES: return dec_bytes(c, pos, end, op->compact, op->nullable, op->view);
    case K_STRUCT:
        if (op->nullable) {
            if (*pos >= end) {
                dec_fail(c, *pos, "truncated: the value runs past the end");
                return NULL;
            }
            if (c->buf[*pos] > 127) { *pos += 1; return Py_NewRef(Py_None); }
            Py_ssize_t p = *pos + 1;
            PyObject *v = dec_struct(c, op->sub, &p, end);
            if (v) *pos = p;
            return v;
        }
        return dec_struct(c, op->sub, pos, end);
    case K_ARRAY: return dec_array(c, op, pos, end);
    default: return new_default(op);
    }
}

/* A tagged field's value. A nullable struct there starts with an unsigned varint, as
 * Kafka writes it: 0 for null, anything else for a struct (not the byte -1 or 1 it has
 * outside tagged fields). */
static PyObject *dec_tagged_value(DCtx *c, Op *op, Py_ssize_t *pos, Py_ssize_t end) {
    if (op->kind != K_STRUCT || !op->nullable) return dec_value(c, op, pos, end);
    uint64_t marker = 0;
    if (read_uvarint(c, pos, end, &marker) < 0) return NULL;
    if (marker == 0) return Py_NewRef(Py_None);
    return dec_struct(c, op->sub, pos, end);
}

/* A tagged-field section (its first byte is not 0): known tags into their slots, the others
 * kept raw, those of other versions refused. The checks of the generated decoders' loop and
 * of wire.read_unknown_tags. */
static PyObject *dec_tags(DCtx *c, Prog *p, PyObject *o, Py_ssize_t *ppos, Py_ssize_t end) {
    const unsigned char *b = c->buf;
    Py_ssize_t pos = *ppos;
    uint64_t count = 0;
    if (read_uvarint(c, &pos, end, &count) < 0) return NULL;
    if ((Py_ssize_t)count > end - pos) {
        dec_short(c, "tagged fields", NULL, (Py_ssize_t)count, pos, end);
        return NULL;
    }
    PyObject *unknown = NULL;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t tag = 0, size = 0;
        Py_ssize_t at = pos;
        if (read_uvarint(c, &pos, end, &tag) < 0 || read_uvarint(c, &pos, end, &size) < 0)
            goto fail;
        if ((Py_ssize_t)size > end - pos) {
            dec_short(c, "tagged field", NULL, (Py_ssize_t)size, pos, end);
            goto fail;
        }
        Py_ssize_t tag_end = pos + (Py_ssize_t)size;
        Op *op = NULL;
        for (Py_ssize_t j = 0; j < p->n_tags; j++)
            if (p->tags[j].tag == tag) { op = &p->tags[j]; break; }
        if (op != NULL) {
            PyObject *v = dec_tagged_value(c, op, &pos, tag_end);
            if (v == NULL) goto fail;
            set_slot(o, op->off, v);
            if (pos != tag_end) {
                dec_fail(c, pos, "tagged field %llu has %zd bytes its value did not use",
                         (unsigned long long)tag, tag_end - pos);
                goto fail;
            }
        } else {
            for (Py_ssize_t j = 0; j < p->n_other; j++)
                if (p->other[j].tag == tag) {
                    dec_fail(c, at, "%U", p->other[j].reason);
                    goto fail;
                }
            if (unknown == NULL && (unknown = PyList_New(0)) == NULL) goto fail;
            PyObject *item = Py_BuildValue("(Ky#)", (unsigned long long)tag,
                                           (const char *)b + pos, (Py_ssize_t)size);
            if (item == NULL) goto fail;
            int r = PyList_Append(unknown, item);
            Py_DECREF(item);
            if (r < 0) goto fail;
            pos = tag_end;
        }
    }
    *ppos = pos;
    if (unknown == NULL) return PyTuple_New(0);
    PyObject *t = PyList_AsTuple(unknown);
    Py_DECREF(unknown);
    return t;
fail:
    Py_XDECREF(unknown);
    return NULL;
}

static PyObject *dec_struct(DCtx *c, Prog *p, Py_ssize_t *ppos, Py_ssize_t end) {
    PyObject *o = p->cls->tp_alloc(p->cls, 0);
    if (o == NULL) return NULL;
    Py_ssize_t pos = *ppos;
    for (Py_ssize_t i = 0; i < p->n_ops; i++) {
        Op *op = &p->ops[i];
        PyObject *v = dec_value(c, op, &pos, end);
        if (v == NULL) goto fail;
        SLOT(o, op->off) = v; /* each slot is set once, from NULL */
    }
    PyObject *unknown;
    if (!p->flexible) {
        unknown = PyTuple_New(0);
    } else {
        for (Py_ssize_t i = 0; i < p->n_tags; i++) {
            PyObject *v = new_default(&p->tags[i]);
            if (v == NULL) goto fail;
            SLOT(o, p->tags[i].off) = v;
        }
        if (pos < end && c->buf[pos] == 0) {
            unknown = PyTuple_New(0);
            pos++;
        } else {
            unknown = dec_tags(c, p, o, &pos, end);
        }
    }
    if (unknown == NULL) goto fail;
    SLOT(o, p->unknown_off) = unknown;
    *ppos = pos;
    return o;
fail:
    Py_DECREF(o);
    return NULL;
}

/* ------------------------------------------------------------------ encoding */

/* Bytes being written: first into a buffer on the caller's stack, then, when that is too
 * small, into a bytes object that is grown in place and handed out without another copy. */
typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
    PyObject *grown; /* the bytes object p points into, once the stack buffer was outgrown */
    /* encode_parts only: the pieces handed out so far (a large zero-copy bytes or records
     * value goes in by reference, between the bytes written before and after it), the
     * stack buffer to start again in, and the size from which a value is not copied. */
    PyObject *parts;
    unsigned char *stack;
    Py_ssize_t stack_cap, parts_min;
} Out;

#define OUT_ON_STACK(buf) {(buf), 0, sizeof(buf), NULL, NULL, (buf), sizeof(buf), 0}
#define OUT_FIRST_GROWTH 16384 /* a produced batch or two: few messages outgrow it */
#define OUT_MOST_RESERVED (1 << 20) /* the most room taken ahead on a former size's word */

static int out_grow(Out *o, Py_ssize_t need) {
    Py_ssize_t cap = o->cap * 2 > OUT_FIRST_GROWTH ? o->cap * 2 : OUT_FIRST_GROWTH;
    while (cap < o->len + need) cap *= 2;
    if (o->grown != NULL) {
        if (_PyBytes_Resize(&o->grown, cap) < 0) return -1; /* it freed the object */
    } else {
        o->grown = PyBytes_FromStringAndSize(NULL, cap);
        if (o->grown == NULL) return -1;
        memcpy(PyBytes_AS_STRING(o->grown), o->p, o->len);
    }
    o->p = (unsigned char *)PyBytes_AS_STRING(o->grown);
    o->cap = cap;
    return 0;
}

/* Room for ``size`` bytes from the start, in the bytes object handed out: a message whose
 * size is known from its last encoding is written without growing and copying. */
static int out_reserve(Out *o, Py_ssize_t size) {
    if (size <= o->cap) return 0;
    o->grown = PyBytes_FromStringAndSize(NULL, size);
    if (o->grown == NULL) return -1;
    o->p = (unsigned char *)PyBytes_AS_STRING(o->grown);
    o->cap = size;
    return 0;
}

/* The bytes written, as a new bytes object; ``o`` is spent. */
static PyObject *out_bytes(Out *o) {
    if (o->grown == NULL) return PyBytes_FromStringAndSize((const char *)o->p, o->len);
    PyObject *b = o->grown;
    o->grown = NULL;
    if (_PyBytes_Resize(&b, o->len) < 0) return NULL;
    return b;
}

static void out_release(Out *o) { Py_CLEAR(o->grown); }

/* encode_parts: what was written so far becomes a piece (the grown bytes object itself, or
 * a copy of the stack buffer), then ``v`` by reference; writing starts again on the stack. */
static int out_pass(Out *o, PyObject *v) {
    if (o->len > 0) {
        PyObject *b = out_bytes(o);
        if (b == NULL) return -1;
        int r = PyList_Append(o->parts, b);
        Py_DECREF(b);
        if (r < 0) return -1;
    } else {
        out_release(o);
    }
    o->p = o->stack;
    o->cap = o->stack_cap;
    o->len = 0;
    return PyList_Append(o->parts, v);
}

#define RESERVE(o, n) \
    if ((o)->len + (n) > (o)->cap && out_grow((o), (n)) < 0) return -1

static inline int put(Out *o, const void *data, Py_ssize_t n) {
    RESERVE(o, n);
    memcpy(o->p + o->len, data, n);
    o->len += n;
    return 0;
}

static inline int put_uvarint(Out *o, uint64_t v) {
    RESERVE(o, 10);
    while (v >= 0x80) {
        o->p[o->len++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o->p[o->len++] = (unsigned char)v;
    return 0;
}

static inline int put_be(Out *o, uint64_t v, int size) {
    RESERVE(o, size);
    unsigned char *at = o->p + o->len;
    switch (size) { /* one store each: fixed-width fields are most of what is written */
    case 1: *at = (unsigned char)v; break;
    case 2: { uint16_t x = __builtin_bswap16((uint16_t)v); memcpy(at, &x, 2); break; }
    case 4: { uint32_t x = __builtin_bswap32((uint32_t)v); memcpy(at, &x, 4); break; }
    case 8: { uint64_t x = __builtin_bswap64(v); memcpy(at, &x, 8); break; }
    default:
        for (int i = size - 1; i >= 0; i--) {
            at[i] = (unsigned char)v;
            v >>= 8;
        }
    }
    o->len += size;
    return 0;
}

/* The value of an int that fits one internal digit, read without a call (CPython 3.11's
 * layout; later versions have a function for it). Returns 0 when it does not fit. */
static inline int small_long(PyObject *v, long long *x) {
#if PY_VERSION_HEX < 0x030C0000
    Py_ssize_t size = Py_SIZE(v);
    if (size < -1 || size > 1) return 0;
    *x = size * (long long)((PyLongObject *)v)->ob_digit[0];
    return 1;
#else
    if (!PyUnstable_Long_IsCompact((PyLongObject *)v)) return 0;
    *x = (long long)PyUnstable_Long_CompactValue((PyLongObject *)v);
    return 1;
#endif
}

/* ``x`` written as an int field of ``kind``; -1 when out of its range (Python decides). */
static inline __attribute__((always_inline)) int put_int(Out *o, int kind, long long x) {
    switch (kind) {
    case K_INT8: if (x < -128 || x > 127) return -1; return put_be(o, (uint64_t)x, 1);
    case K_INT16: if (x < -32768 || x > 32767) return -1; return put_be(o, (uint64_t)x, 2);
    case K_UINT16: if (x < 0 || x > 65535) return -1; return put_be(o, (uint64_t)x, 2);
    case K_INT32:
        if (x < INT32_MIN || x > INT32_MAX) return -1;
        return put_be(o, (uint64_t)x, 4);
    case K_UINT32: if (x < 0 || x > 0xFFFFFFFFLL) return -1; return put_be(o, (uint64_t)x, 4);
    default: return put_be(o, (uint64_t)x, 8);
    }
}

/* Exactly the values struct.pack takes for int fields without __index__ calls: ints
 * (bools included) in range. Anything else is left to the Python encoder. */
static int enc_fixed(Out *o, int kind, PyObject *v) {
    if (kind == K_BOOL) {
        int t = PyObject_IsTrue(v);
        if (t < 0) return -1;
        return put_be(o, (uint64_t)t, 1);
    }
    if (kind == K_FLOAT64) {
        double d;
        if (PyFloat_CheckExact(v)) d = PyFloat_AS_DOUBLE(v);
        else if (PyLong_Check(v)) {
            d = PyLong_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) return -1;
        } else return -1;
        uint64_t bits;
        memcpy(&bits, &d, 8);
        return put_be(o, bits, 8);
    }
    if (!PyLong_Check(v)) return -1;
    long long x;
    if (!small_long(v, &x)) {
        int overflow;
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) return -1;
    }
    return put_int(o, kind, x);
}

/* enc_fixed's common case inline: an exact int of one internal digit, or True/False, for
 * an int or bool field. No Python code runs on that path, so the caller need not hold a
 * reference to ``v``; the rest goes to enc_fixed with one held. */
static inline __attribute__((always_inline)) int enc_int(Out *o, int kind, PyObject *v) {
    long long x;
    if (PyLong_CheckExact(v) && kind < K_FLOAT64 && small_long(v, &x)) return put_int(o, kind, x);
    if (kind == K_BOOL && (v == Py_True || v == Py_False)) return put_be(o, v == Py_True, 1);
    Py_INCREF(v); /* a __bool__ may run Python code */
    int r = enc_fixed(o, kind, v);
    Py_DECREF(v);
    return r;
}

/* An array of int32 or int64 (most int arrays: replicas, offsets, ids): room made once,
 * then each exact int of one digit stored in place; anything else through enc_int. */
static int enc_wide_ints(Out *o, int el, PyObject *v, int is_list, Py_ssize_t n) {
    int size = FIXED_SIZE[el];
    RESERVE(o, n * size);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_SIZE(v) != n) return -1; /* mutated by a __bool__'s Python code */
        PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
        long long x;
        if (PyLong_CheckExact(item) && small_long(item, &x) && o->len + size <= o->cap) {
            if (size == 4) {
                uint32_t b = __builtin_bswap32((uint32_t)x);
                memcpy(o->p + o->len, &b, 4);
            } else {
                uint64_t b = __builtin_bswap64((uint64_t)x);
                memcpy(o->p + o->len, &b, 8);
            }
            o->len += size;
        } else {
            int r = enc_int(o, el, item);
            if (r < 0) return r;
        }
    }
    return 0;
}

static int enc_uuid(Out *o, PyObject *v) {
    if (!Py_IS_TYPE(v, uuid_type)) return -1;
    PyObject *i = SLOT(v, uuid_int_off);
    if (i == NULL || !PyLong_CheckExact(i) || _PyLong_Sign(i) < 0) return -1;
    if (_PyLong_NumBits(i) > 128) return -1;
    unsigned long long lo = PyLong_AsUnsignedLongLongMask(i);
    PyObject *sixty_four = PyLong_FromLong(64);
    if (sixty_four == NULL) return -1;
    PyObject *h = PyNumber_Rshift(i, sixty_four);
    Py_DECREF(sixty_four);
    if (h == NULL) return -1;
    unsigned long long hi = PyLong_AsUnsignedLongLongMask(h);
    Py_DECREF(h);
    if (PyErr_Occurred()) return -1;
    if (put_be(o, hi, 8) < 0) return -1;
    return put_be(o, lo, 8);
}

/* Encoders return 0, -1 to hand the call to the Python encoder (a value of the wrong type
 * or range: it raises its own error) or -2 with an exception set, raised as is. */

/* FieldUnsupported(path, why), built by wire.unsupported() as the Python encoder does. */
static int refuse(PyObject *path, PyObject *why) {
    PyObject *e = PyObject_CallFunctionObjArgs(unsupported_fn, path, why, NULL);
    if (e == NULL) return -1;
    PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_DECREF(e);
    return -2;
}

/* None where the layout has no null: refused when the field is nullable at other versions
 * (the encoder tests for it), else a wrong value left to the Python encoder. */
static int refuse_null(Op *op) {
    return op != NULL && op->refuse_null ? refuse(op->path, why_null) : -1;
}

/* ``op`` is the field's, NULL for array items. */
static int enc_string(Out *o, PyObject *v, int compact, int nullable, Op *op) {
    if (v == Py_None) {
        if (!nullable) return refuse_null(op);
        return compact ? put_uvarint(o, 0) : put_be(o, 0xFFFF, 2);
    }
    if (!PyUnicode_Check(v)) return -1;
    Py_ssize_t n;
    const char *s;
    if (PyUnicode_IS_COMPACT_ASCII(v)) { /* most names: the text is its UTF-8, in place */
        s = (const char *)PyUnicode_DATA(v);
        n = PyUnicode_GET_LENGTH(v);
    } else {
        s = PyUnicode_AsUTF8AndSize(v, &n);
    }
    if (s == NULL || n > 0x7FFF) return -1;
    if (compact ? put_uvarint(o, (uint64_t)n + 1) : put_be(o, (uint64_t)n, 2)) return -1;
    return put(o, s, n);
}

/* bytes, bytearray or a memoryview whose length is its size in bytes. */
static int enc_bytes(Out *o, PyObject *v, int compact, int nullable, Op *op) {
    if (v == Py_None) {
        if (!nullable) return refuse_null(op);
        return compact ? put_uvarint(o, 0) : put_be(o, 0xFFFFFFFF, 4);
    }
    const char *data;
    Py_ssize_t n;
    Py_buffer view;
    int release = 0;
    if (PyBytes_Check(v)) {
        data = PyBytes_AS_STRING(v);
        n = PyBytes_GET_SIZE(v);
    } else if (PyByteArray_Check(v) || PyMemoryView_Check(v)) {
        if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0) return -1;
        release = 1;
        Py_ssize_t len = PyObject_Length(v);
        if (len != view.len) { PyBuffer_Release(&view); return -1; }
        data = view.buf;
        n = view.len;
    } else {
        return -1;
    }
    int r = (compact ? put_uvarint(o, (uint64_t)n + 1) : put_be(o, (uint64_t)n, 4));
    if (r == 0) {
        if (o->parts != NULL && op->view && n >= o->parts_min &&
            (PyBytes_CheckExact(v) || PyMemoryView_Check(v)))
            r = out_pass(o, v);
        else
            r = put(o, data, n);
    }
    if (release) PyBuffer_Release(&view);
    return r;
}

static int enc_struct(Out *o, Prog *p, PyObject *obj);

static int enc_array(Out *o, Op *op, PyObject *v) {
    if (v == Py_None) {
        if (!op->nullable) return refuse(op->path, why_null); /* for arrays, whatever the field */
        return op->compact ? put_uvarint(o, 0) : put_be(o, 0xFFFFFFFF, 4);
    }
    int is_list = PyList_Check(v);
    if (!is_list && !PyTuple_Check(v)) return -1;
    Py_ssize_t n = Py_SIZE(v);
    if (n > INT32_MAX) return -1;
    if (op->compact ? put_uvarint(o, (uint64_t)n + 1) : put_be(o, (uint64_t)n, 4)) return -1;
    int el = op->elem;
    if (el == K_INT32 || el == K_INT64) return enc_wide_ints(o, el, v, is_list, n);
    if (el <= K_BOOL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (Py_SIZE(v) != n) return -1; /* mutated by a __bool__'s Python code */
            int r = enc_int(o, el, is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i));
            if (r < 0) return r;
        }
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_SIZE(v) != n) return -1; /* mutated by a comparison's Python code */
        PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
        Py_INCREF(item);
        int r;
        if (el == K_STRUCT) r = enc_struct(o, op->sub, item);
        else if (el == K_UUID) r = enc_uuid(o, item);
        else if (el == K_STRING) r = enc_string(o, item, op->compact, 0, NULL);
        else r = enc_bytes(o, item, op->compact, 1, NULL); /* as write_nullable_bytes: None is null */
        Py_DECREF(item);
        if (r < 0) return r;
    }
    return 0;
}

static int enc_value(Out *o, Op *op, PyObject *v) {
    int k = op->kind;
    if (k <= K_BOOL) return enc_fixed(o, k, v);
    switch (k) {
    case K_UUID: return enc_uuid(o, v);
    case K_STRING: return enc_string(o, v, op->compact, op->nullable, op);
    case K_BYTES: return enc_bytes(o, v, op->compact, op->nullable, op);
    case K_STRUCT:
        if (op->nullable) {
            if (v == Py_None) return put_be(o, 0xFF, 1);
            if (put_be(o, 1, 1) < 0) return -1;
        } else if (v == Py_None) {
            return refuse_null(op);
        }
        return enc_struct(o, op->sub, v);
    case K_ARRAY: return enc_array(o, op, v);
    default: return -1;
    }
}

typedef struct {
    uint64_t tag;
    const char *data; /* unknown tags: the bytes object's data */
    Py_ssize_t start, len; /* known tags: the value's place in the scratch buffer */
} TagOut;

static int enc_tags(Out *o, Prog *p, PyObject *obj, PyObject *unknown) {
    Py_ssize_t n_unknown = 0;
    if (unknown != NULL) {
        if (!PyTuple_Check(unknown) && !PyList_Check(unknown)) return -1;
        n_unknown = Py_SIZE(unknown);
    }
    if (p->n_tags == 0 && n_unknown == 0) return put_be(o, 0, 1);
    unsigned char scratch_init[256];
    Out scratch = OUT_ON_STACK(scratch_init);
    /* Most structs have a few tagged fields: their places fit on the stack. */
    TagOut known_init[8];
    TagOut *known = p->n_tags <= 8 ? known_init : PyMem_Calloc(p->n_tags, sizeof(TagOut));
    TagOut *unk = NULL;
    int rc = -1;
    Py_ssize_t n_known = 0;
    if (known == NULL) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < p->n_tags; i++) {
        Op *op = &p->tags[i];
        PyObject *v = SLOT(obj, op->off);
        if (v == NULL) goto done;
        Py_INCREF(v);
        int d = differs(v, op->dcmp);
        if (d > 0) {
            Py_ssize_t start = scratch.len;
            int r;
            if (op->kind == K_STRUCT && op->nullable) { /* the marker dec_tagged_value reads */
                r = put_be(&scratch, v == Py_None ? 0 : 1, 1);
                if (r >= 0 && v != Py_None) r = enc_struct(&scratch, op->sub, v);
            } else {
                r = enc_value(&scratch, op, v);
            }
            if (r < 0) d = r;
            known[n_known].tag = op->tag;
            known[n_known].start = start;
            known[n_known].len = scratch.len - start;
            n_known++;
        }
        Py_DECREF(v);
        if (d < 0) { rc = d; goto done; }
    }
    /* Counted again: a comparison above may have run Python code that changed the list. */
    n_unknown = Py_SIZE(unknown);
    if (n_unknown > 64) goto done; /* sorted below in quadratic time: Python sorts more */
    if (n_unknown > 0) {
        unk = PyMem_Calloc(n_unknown, sizeof(TagOut));
        if (unk == NULL) { PyErr_NoMemory(); goto done; }
    }
    for (Py_ssize_t i = 0; i < n_unknown; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(unknown, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) goto done;
        PyObject *t = PyTuple_GET_ITEM(item, 0), *b = PyTuple_GET_ITEM(item, 1);
        if (!PyLong_Check(t) || !PyBytes_Check(b)) goto done;
        unsigned long long tag = PyLong_AsUnsignedLongLong(t);
        if (PyErr_Occurred() || tag > 0xFFFFFFFFULL) goto done;
        unk[i].tag = tag;
        unk[i].data = PyBytes_AS_STRING(b);
        unk[i].len = PyBytes_GET_SIZE(b);
        unk[i].start = i; /* stable order among equal tags */
    }
    /* Stable by tag: insertion sort over at most 64 items. */
    for (Py_ssize_t i = 1; i < n_unknown; i++) {
        TagOut x = unk[i];
        Py_ssize_t j = i;
        while (j > 0 && unk[j - 1].tag > x.tag) { unk[j] = unk[j - 1]; j--; }
        unk[j] = x;
    }
    if (n_known + n_unknown == 0) { rc = put_be(o, 0, 1); goto done; }
    if (put_uvarint(o, (uint64_t)(n_known + n_unknown)) < 0) goto done;
    Py_ssize_t a = 0, b = 0;
    while (a < n_known || b < n_unknown) {
        /* Equal tags: the known field first, as a stable sort of known + unknown puts it. */
        int take_known = b >= n_unknown || (a < n_known && known[a].tag <= unk[b].tag);
        TagOut *t = take_known ? &known[a++] : &unk[b++];
        const char *data = take_known ? (const char *)scratch.p + t->start : t->data;
        if (put_uvarint(o, t->tag) < 0 || put_uvarint(o, (uint64_t)t->len) < 0 ||
            put(o, data, t->len) < 0)
            goto done;
    }
    rc = 0;
done:
    out_release(&scratch);
    if (known != known_init) PyMem_Free(known);
    PyMem_Free(unk);
    return rc;
}

static int enc_struct(Out *o, Prog *p, PyObject *obj) {
    if (!Py_IS_TYPE(obj, p->cls)) return -1;
    for (Py_ssize_t i = 0; i < p->n_ops; i++) {
        Op *op = &p->ops[i];
        PyObject *v = SLOT(obj, op->off);
        if (v == NULL) return -1;
        int r;
        if (op->kind <= K_BOOL) {
            r = enc_int(o, op->kind, v);
            if (r < 0) return r;
            continue;
        }
        if (op->kind == K_STRING) { /* runs no Python code: the slot's reference suffices */
            r = enc_string(o, v, op->compact, op->nullable, op);
            if (r < 0) return r;
            continue;
        }
        Py_INCREF(v);
        if (op->kind != K_ABSENT) {
            r = enc_value(o, op, v);
        } else if (op->ignorable) {
            r = 0;
        } else {
            r = differs(v, op->dcmp);
            if (r > 0) r = refuse(op->path, why_default);
        }
        Py_DECREF(v);
        if (r < 0) return r;
    }
    PyObject *unknown = SLOT(obj, p->unknown_off);
    if (unknown == NULL) return -1;
    if (!p->flexible) {
        int t = PyObject_IsTrue(unknown);
        return t == 0 ? 0 : (t > 0 ? refuse(p->qualname, why_tags) : -1);
    }
    if (p->n_tags == 0 && PyTuple_CheckExact(unknown) && PyTuple_GET_SIZE(unknown) == 0)
        return put_be(o, 0, 1);
    Py_INCREF(unknown);
    int r = enc_tags(o, p, obj, unknown);
    Py_DECREF(unknown);
    return r;
}

/* ------------------------------------------------------------------ Codec objects */

typedef struct {
    PyObject_HEAD
    Prog *prog;
    PyObject *py_dec, *py_enc, *cls;
} Codec;

static void codec_dealloc(Codec *self) {
    Py_XDECREF(self->py_dec);
    Py_XDECREF(self->py_enc);
    Py_XDECREF(self->cls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *codec_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *cls, *plan, *dec, *enc;
    if (!PyArg_ParseTuple(args, "O!OOO:Codec", &PyType_Type, &cls, &plan, &dec, &enc))
        return NULL;
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) < 1 || PyTuple_GET_ITEM(plan, 0) != cls) {
        PyErr_SetString(PyExc_ValueError, "the plan is not for this class");
        return NULL;
    }
    if (decode_error == NULL) {
        unsupported_plan("codecs before configure()");
        return NULL;
    }
    Prog *p = compile_plan(plan);
    if (p == NULL) return NULL;
    Codec *self = (Codec *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->prog = p;
    self->cls = Py_NewRef(cls);
    self->py_dec = Py_NewRef(dec);
    self->py_enc = Py_NewRef(enc);
    return (PyObject *)self;
}

static PyObject *fall_back(PyObject *fn, PyObject *const *args, Py_ssize_t n) {
    PyErr_Clear();
    n_fallbacks++;
    return PyObject_Vectorcall(fn, args, n, NULL);
}

static PyObject *codec_decode(Codec *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode(buf, pos, end)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || end == -1) && PyErr_Occurred()) return fall_back(self->py_dec, args, 3);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return fall_back(self->py_dec, args, 3);
    /* A view of items wider than a byte indexes differently: the Python codec decides. */
    if (pos < 0 || pos > end || end > view.len ||
        (PyMemoryView_Check(args[0]) && (PyMemoryView_GET_BUFFER(args[0])->itemsize != 1 ||
                                         PyMemoryView_GET_BUFFER(args[0])->ndim != 1))) {
        PyBuffer_Release(&view);
        return fall_back(self->py_dec, args, 3);
    }
    DCtx c = {view.buf, view.len, args[0], NULL, 0};
    PyObject *obj = dec_struct(&c, self->prog, &pos, end);
    Py_XDECREF(c.view);
    PyBuffer_Release(&view);
    if (obj == NULL) return c.raised ? NULL : fall_back(self->py_dec, args, 3);
    PyObject *p = PyLong_FromSsize_t(pos);
    if (p == NULL) { Py_DECREF(obj); return NULL; }
    PyObject *t = PyTuple_New(2);
    if (t == NULL) { Py_DECREF(obj); Py_DECREF(p); return NULL; }
    PyTuple_SET_ITEM(t, 0, obj);
    PyTuple_SET_ITEM(t, 1, p);
    return t;
}

static PyObject *codec_encode(Codec *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "encode(obj, w)");
        return NULL;
    }
    unsigned char init[1024];
    Out o = OUT_ON_STACK(init);
    int r = enc_struct(&o, self->prog, args[0]);
    PyObject *data = r < 0 ? NULL : out_bytes(&o);
    out_release(&o);
    if (r == -2) return NULL; /* a refusal, raised as the Python encoder raises it */
    if (data == NULL) return fall_back(self->py_enc, args, 2);
    PyObject *res = PyObject_CallOneArg(args[1], data);
    Py_DECREF(data);
    if (res == NULL) return NULL;
    Py_DECREF(res);
    Py_RETURN_NONE;
}

/* A message's encode(version), installed on its class by bind_native: the version's compiled
 * encoder called directly, without the list and join of the Python method. Anything that is
 * not a plain success (a version without a compiled layout, a value the encoder declines, a
 * refusal) runs the Python method, kept as _encode_in_python, which gives the result or the
 * error the caller would get without the accelerator. */
static PyObject *encoders_name, *python_encode_name;

/* The compiled layouts message_encode found, by class: an entry stands for the class while
 * its version tag (which the interpreter changes whenever a class attribute is set, as
 * bind_native, the fuzz's checks and tests set _encoders) is the one it was made under, so
 * a repeated encode reaches a small version's layout without looking up the class's
 * encoders dict and the version in it. The entry holds that dict, which holds the codecs,
 * which hold the programs; the class pointer is only compared (tags are never reused). */
#define ENC_CACHE_SLOTS 256
#define ENC_CACHE_VERSIONS 32
typedef struct {
    PyTypeObject *type;
    unsigned int tag;
    PyObject *encoders;
    Prog *progs[ENC_CACHE_VERSIONS];
} EncCacheEntry;
static EncCacheEntry enc_cache[ENC_CACHE_SLOTS];

static inline EncCacheEntry *enc_cache_entry(PyTypeObject *type) {
    return &enc_cache[((uintptr_t)type >> 6) % ENC_CACHE_SLOTS];
}

/* The class's version tag, or 0 while it has none. */
static inline unsigned int type_tag(PyTypeObject *type) {
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
    if (!(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) return 0;
#endif
    return type->tp_version_tag;
}

/* ``v`` as a version to look up in the table: a small non-negative int, else -1. */
static inline long table_version(PyObject *v) {
    if (!PyLong_CheckExact(v)) return -1;
#if PY_VERSION_HEX < 0x030C0000
    /* 3.11's ints keep their size in ob_size: 0 for zero, 1 for one 30-bit digit. */
    Py_ssize_t digits = Py_SIZE(v);
    return digits == 0 ? 0 : digits == 1 ? (long)((PyLongObject *)v)->ob_digit[0] : -1;
#else
    long version = PyLong_AsLong(v);
    if (version == -1 && PyErr_Occurred()) PyErr_Clear();
    return version;
#endif
}

/* The compiled layout of version ``v`` (``version`` from table_version) in ``encoders``,
 * the class's dict, or NULL (no compiled layout: the Python method answers). Remembered
 * for the class under its current version tag. */
static Prog *encoder_prog(PyTypeObject *type, PyObject *encoders, PyObject *v, long version) {
    PyObject *fn = PyDict_Check(encoders) ? PyDict_GetItemWithError(encoders, v) : NULL;
    if (fn == NULL || !PyCFunction_Check(fn) ||
        PyCFunction_GET_FUNCTION(fn) != (PyCFunction)(void (*)(void))codec_encode) {
        PyErr_Clear();
        return NULL;
    }
    Prog *p = ((Codec *)PyCFunction_GET_SELF(fn))->prog;
    unsigned int tag = type_tag(type);
    if (version >= 0 && version < ENC_CACHE_VERSIONS && tag != 0) {
        EncCacheEntry *e = enc_cache_entry(type);
        if (e->type != type || e->tag != tag || e->encoders != encoders) {
            PyObject *old = e->encoders;
            e->type = type;
            e->tag = tag;
            e->encoders = Py_NewRef(encoders);
            memset(e->progs, 0, sizeof e->progs);
            Py_XDECREF(old);
        }
        e->progs[version] = p;
    }
    return p;
}

/* The compiled layout of ``self``'s class at version ``v``, or NULL (no compiled layout:
 * the Python method answers); ``*encoders`` is then the class's encoders dict (borrowed),
 * which holds the layout: the caller holds it while it encodes. */
static inline Prog *message_prog(PyTypeObject *type, PyObject *v, PyObject **encoders) {
    long version = table_version(v);
    EncCacheEntry *e = enc_cache_entry(type);
    if (version >= 0 && version < ENC_CACHE_VERSIONS && e->type == type && e->tag != 0 &&
        e->tag == type_tag(type) && e->progs[version] != NULL) {
        *encoders = e->encoders;
        return e->progs[version];
    }
    /* Borrowed, from the type's attribute cache: a plain class attribute needs none of
     * getattr's descriptor steps. */
    *encoders = _PyType_Lookup(type, encoders_name);
    return *encoders != NULL ? encoder_prog(type, *encoders, v, version) : NULL;
}

static PyObject *message_encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "encode(version)");
        return NULL;
    }
    PyTypeObject *type = Py_TYPE(self);
    PyObject *encoders;
    Prog *p = message_prog(type, args[0], &encoders);
    if (p != NULL) {
        Py_INCREF(encoders); /* a value's Python code could replace the class's dict */
        unsigned char init[1024];
        Out o = OUT_ON_STACK(init);
        /* Messages of a type tend to be of similar sizes: a large one starts with the room
         * the last one took (up to a bound, so one huge message does not make every later
         * one allocate that much), instead of growing through copies from 1 KiB. */
        Py_ssize_t hint = p->last_size < OUT_MOST_RESERVED ? p->last_size : OUT_MOST_RESERVED;
        int r = out_reserve(&o, hint);
        if (r == 0) r = enc_struct(&o, p, self);
        if (r == 0) p->last_size = o.len;
        PyObject *data = r < 0 ? NULL : out_bytes(&o);
        out_release(&o);
        Py_DECREF(encoders);
        if (data != NULL) return data;
    }
    PyErr_Clear();
    PyObject *python = PyObject_GetAttr((PyObject *)type, python_encode_name);
    if (python == NULL) return NULL;
    PyObject *call[2] = {self, args[0]};
    PyObject *res = PyObject_Vectorcall(python, call, 2, NULL);
    Py_DECREF(python);
    return res;
}

/* encode_parts(message, version, parts_min): the message's encoding as a list of pieces
 * whose concatenation is encode(version), each zero-copy bytes or records value (stored
 * batch bytes) of at least parts_min bytes passed in by reference, not copied. None when
 * the version has no compiled layout or the encoder declines or refuses a value: the
 * Python method then gives the result or the error. */
static PyObject *encode_parts(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "encode_parts(message, version, parts_min)");
        return NULL;
    }
    PyObject *self = args[0];
    Py_ssize_t parts_min = PyLong_AsSsize_t(args[2]);
    if (parts_min == -1 && PyErr_Occurred()) return NULL;
    PyObject *encoders;
    Prog *p = message_prog(Py_TYPE(self), args[1], &encoders);
    if (p == NULL) Py_RETURN_NONE;
    Py_INCREF(encoders); /* a value's Python code could replace the class's dict */
    PyObject *parts = PyList_New(0);
    if (parts == NULL) { Py_DECREF(encoders); return NULL; }
    unsigned char init[1024];
    Out o = OUT_ON_STACK(init);
    o.parts = parts;
    o.parts_min = parts_min > 0 ? parts_min : 1;
    int r = enc_struct(&o, p, self);
    if (r == 0 && (o.len > 0 || PyList_GET_SIZE(parts) == 0)) {
        PyObject *b = out_bytes(&o);
        r = b == NULL ? -1 : PyList_Append(parts, b);
        Py_XDECREF(b);
    }
    out_release(&o);
    Py_DECREF(encoders);
    if (r < 0) {
        Py_DECREF(parts);
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return parts;
}

/* A message class's decode(data, version), likewise: the compiled decoder called directly
 * for a buffer it takes whole. A DecodeError it raises gets the message's name and version
 * as the Python method gives them; anything else (no compiled layout, trailing bytes, an
 * exotic buffer) runs the Python method, kept as _decode_in_python. */
static PyObject *decoders_name, *python_decode_name, *reason_name, *offset_name;

static PyObject *renamed_decode_error(PyObject *cls, PyObject *version) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *reason = value ? PyObject_GetAttr(value, reason_name) : NULL;
    PyObject *offset = value ? PyObject_GetAttr(value, offset_name) : NULL;
    PyObject *name = PyType_GetName((PyTypeObject *)cls);
    PyObject *e = reason && offset && name
        ? PyObject_CallFunctionObjArgs(decode_error, reason, name, version, offset, NULL)
        : NULL;
    Py_XDECREF(reason);
    Py_XDECREF(offset);
    Py_XDECREF(name);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (e != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

#define GC_PAUSE_BYTES 4096 /* message.py's _GC_PAUSE_BYTES */

static PyObject *message_decode(PyObject *cls, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decode(data, version)");
        return NULL;
    }
    PyObject *decoders = PyObject_GetAttr(cls, decoders_name);
    if (decoders == NULL) return NULL;
    PyObject *fn = PyDict_Check(decoders) ? PyDict_GetItemWithError(decoders, args[1]) : NULL;
    Py_XINCREF(fn); /* it holds the codec while decoding runs */
    Py_DECREF(decoders);
    PyObject *data = args[0];
    int plain = PyBytes_CheckExact(data) || PyByteArray_CheckExact(data) ||
                (PyMemoryView_Check(data) && PyMemoryView_GET_BUFFER(data)->itemsize == 1 &&
                 PyMemoryView_GET_BUFFER(data)->ndim == 1);
    Py_buffer view;
    if (fn != NULL && PyCFunction_Check(fn) &&
        PyCFunction_GET_FUNCTION(fn) == (PyCFunction)(void (*)(void))codec_decode && plain &&
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) == 0) {
        Codec *codec = (Codec *)PyCFunction_GET_SELF(fn);
        Py_ssize_t pos = 0;
        DCtx c = {view.buf, view.len, data, NULL, 0};
        /* As decode_prefix: the objects of a large message all stay alive, so collections
         * while they are made would find nothing to free. */
        int paused = view.len > GC_PAUSE_BYTES && PyGC_Disable();
        PyObject *obj = dec_struct(&c, codec->prog, &pos, view.len);
        if (paused) PyGC_Enable();
        Py_XDECREF(c.view);
        PyBuffer_Release(&view);
        Py_DECREF(fn);
        if (obj != NULL && pos == view.len) return obj;
        Py_XDECREF(obj);
        if (c.raised) return renamed_decode_error(cls, args[1]);
        fn = NULL;
    }
    Py_XDECREF(fn);
    PyErr_Clear();
    PyObject *python = PyObject_GetAttr(cls, python_decode_name);
    if (python == NULL) return NULL;
    PyObject *res = PyObject_Vectorcall(python, args, 2, NULL);
    Py_DECREF(python);
    return res;
}

static PyMethodDef message_decode_def = {
    "decode", (PyCFunction)(void (*)(void))message_decode, METH_FASTCALL,
    "decode(data, version): decode data, which must be consumed whole"};

static PyMethodDef message_encode_def = {
    "encode", (PyCFunction)(void (*)(void))message_encode, METH_FASTCALL,
    "encode(version) -> bytes: the wire bytes of this message at version"};

/* A method descriptor of the message class itself, so that msg.encode(v) is called as
 * list.append is: with no bound method made per call, and through the interpreter's
 * specialised call of a C method, which takes only a descriptor of the instance's own
 * type (one of the base class sends every call down the generic path). */
static PyObject *encode_method(PyObject *mod, PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "encode_method(message class)");
        return NULL;
    }
    return PyDescr_NewMethod((PyTypeObject *)cls, &message_encode_def);
}

/* decode bound to one class once: not a descriptor, so cls.decode(data, v) makes no
 * bound method per call as a classmethod does. */
static PyObject *decode_method(PyObject *mod, PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "decode_method(message class)");
        return NULL;
    }
    return PyCFunction_NewEx(&message_decode_def, cls, NULL);
}

static PyMethodDef codec_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))codec_decode, METH_FASTCALL,
     "decode(buf, pos, end) -> (obj, pos), as the generated Python decoder"},
    {"encode", (PyCFunction)(void (*)(void))codec_encode, METH_FASTCALL,
     "encode(obj, w): calls w once with the whole encoding"},
    {NULL}
};

static PyMemberDef codec_members[] = {
    {"python_decoder", T_OBJECT, offsetof(Codec, py_dec), READONLY,
     "the generated Python decoder of the same layout"},
    {"python_encoder", T_OBJECT, offsetof(Codec, py_enc), READONLY,
     "the generated Python encoder of the same layout"},
    {NULL}
};

static PyObject *codec_repr(Codec *self) {
    return PyUnicode_FromFormat("<native codec of %s>", ((PyTypeObject *)self->cls)->tp_name);
}

static PyTypeObject CodecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkagen.runtime._native.Codec",
    .tp_basicsize = sizeof(Codec),
    .tp_dealloc = (destructor)codec_dealloc,
    .tp_repr = (reprfunc)codec_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Codec(cls, plan, py_decoder, py_encoder): one compiled wire layout.",
    .tp_methods = codec_methods,
    .tp_members = codec_members,
    .tp_new = codec_new,
};

/* ------------------------------------------------------------------ field tables */

/* Field tables (see _native.h) compiled against a layout's plan, once per pair. */
static PyObject *json_programs;          /* id(prog) -> (table, capsule of its JProg) */
static unsigned long long n_json_fallbacks;

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The op of the slot at ``off`` in a layout: among the fields, then the tagged ones. */
static Op *find_op(Prog *p, Py_ssize_t off, int *in_tags) {
    for (Py_ssize_t i = 0; i < p->n_ops; i++)
        if (p->ops[i].off == off) { *in_tags = 0; return &p->ops[i]; }
    for (Py_ssize_t i = 0; i < p->n_tags; i++)
        if (p->tags[i].off == off) { *in_tags = 1; return &p->tags[i]; }
    return NULL;
}

static JProg *compile_json(Prog *p, PyObject *table) {
    PyObject *key = PyLong_FromVoidPtr(p);
    if (key == NULL) return NULL;
    PyObject *known = PyDict_GetItemWithError(json_programs, key);
    if (known != NULL) {
        Py_DECREF(key);
        if (PyTuple_GET_ITEM(known, 0) != table) {
            unsupported_plan("two JSON tables for one layout");
            return NULL;
        }
        return (JProg *)PyCapsule_GetPointer(PyTuple_GET_ITEM(known, 1), NULL);
    }
    if (PyErr_Occurred()) goto error_key;
    if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 3 ||
        PyTuple_GET_ITEM(table, 0) != (PyObject *)p->cls ||
        !PyTuple_Check(PyTuple_GET_ITEM(table, 1)) || !PyLong_Check(PyTuple_GET_ITEM(table, 2))) {
        unsupported_plan("a malformed field table");
        goto error_key;
    }
    long long first_free = PyLong_AsLongLong(PyTuple_GET_ITEM(table, 2));
    if (first_free == -1 && PyErr_Occurred()) goto error_key;
    if (first_free < 0 || first_free > 0x7FFFFFFF) {
        unsupported_plan("a first free tag");
        goto error_key;
    }
    PyObject *rows = PyTuple_GET_ITEM(table, 1);
    /* Like programs, these live as long as the process; a failed one leaks once. */
    JProg *jp = PyMem_Calloc(1, sizeof(JProg));
    if (jp == NULL) { PyErr_NoMemory(); goto error_key; }
    jp->prog = p;
    jp->first_free = first_free;
    jp->n = PyTuple_GET_SIZE(rows);
    jp->fields = PyMem_Calloc(jp->n + 1, sizeof(JField));
    if (jp->fields == NULL) { PyErr_NoMemory(); goto error_key; }
    for (Py_ssize_t i = 0; i < jp->n; i++) {
        PyObject *row = PyTuple_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 5 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(row, 1))) {
            unsupported_plan("a malformed JSON field");
            goto error_key;
        }
        JField *f = &jp->fields[i];
        Py_ssize_t off = slot_offset(p->cls, PyTuple_GET_ITEM(row, 0));
        if (off < 0) goto error_key;
        int in_tags = 0;
        f->op = find_op(p, off, &in_tags);
        /* A field the layout does not list (tagged at a version without tagged fields), or
         * tagged in the JSON form but not at this version, has no default to compare with. */
        f->tagged = flag(row, 2);
        f->nullable = flag(row, 3);
        if (f->tagged < 0 || f->nullable < 0) goto error_key;
        if (f->op == NULL || (f->tagged && f->op->kind != K_ABSENT && !in_tags)) {
            unsupported_plan("this field in the JSON form");
            goto error_key;
        }
        f->key = Py_NewRef(PyTuple_GET_ITEM(row, 1));
        PyUnicode_InternInPlace(&f->key);
        int k = f->op->kind;
        if (k == K_STRUCT || (k == K_ARRAY && f->op->elem == K_STRUCT)) {
            f->sub = compile_json(f->op->sub, PyTuple_GET_ITEM(row, 4));
            if (f->sub == NULL) goto error_key;
        }
    }
    PyObject *cap = PyCapsule_New(jp, NULL, NULL);
    if (cap == NULL) goto error_key;
    PyObject *entry = PyTuple_Pack(2, table, cap);
    Py_DECREF(cap);
    if (entry == NULL || PyDict_SetItem(json_programs, key, entry) < 0) {
        Py_XDECREF(entry);
        goto error_key;
    }
    Py_DECREF(entry);
    Py_DECREF(key);
    return jp;
error_key:
    Py_DECREF(key);
    return NULL;
}

/* The field table compiled against each version's codec; {version: JProg}, or NULL with
 * NotImplementedError when no version compiles. Shared by JsonForm and, through _C_API, the
 * fuzz's RandomBuilder. */
static JProg **table_programs(PyObject *cls, PyObject *table, PyObject *codecs,
                              Py_ssize_t *n_versions, int (*usable)(JProg *)) {
    Py_ssize_t top = -1, pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(codecs, &pos, &k, &v)) {
        Py_ssize_t version = PyLong_AsSsize_t(k);
        if (version == -1 && PyErr_Occurred()) return NULL;
        if (version < 0 || version > 4096 || !Py_IS_TYPE(v, &CodecType) ||
            ((Codec *)v)->prog->cls != (PyTypeObject *)cls) {
            PyErr_SetString(PyExc_ValueError, "codecs maps small versions to this class's Codecs");
            return NULL;
        }
        if (version > top) top = version;
    }
    JProg **by_version = PyMem_Calloc(top + 2, sizeof(JProg *));
    if (by_version == NULL) { PyErr_NoMemory(); return NULL; }
    int served = 0;
    pos = 0;
    while (PyDict_Next(codecs, &pos, &k, &v)) {
        JProg *jp = compile_json(((Codec *)v)->prog, table);
        if (jp == NULL) {
            /* That layout keeps the Python functions; others may still compile. */
            if (!PyErr_ExceptionMatches(PyExc_NotImplementedError)) {
                PyMem_Free(by_version);
                return NULL;
            }
            PyErr_Clear();
            continue;
        }
        if (usable != NULL && !usable(jp)) continue;
        by_version[PyLong_AsSsize_t(k)] = jp;
        served++;
    }
    if (!served) {
        PyMem_Free(by_version);
        unsupported_plan("any version of this class");
        return NULL;
    }
    *n_versions = top + 1;
    return by_version;
}

/* ------------------------------------------------------------------ JSON form */

/* -- to_json */

static PyObject *b64_text(const unsigned char *data, Py_ssize_t n, const char *alphabet,
                          int pad) {
    if (n > PY_SSIZE_T_MAX / 2) return NULL;
    Py_ssize_t full = n / 3, rest = n % 3;
    Py_ssize_t len = full * 4 + (rest == 0 ? 0 : (pad ? 4 : rest + 1));
    PyObject *s = PyUnicode_New(len, 127);
    if (s == NULL) return NULL;
    Py_UCS1 *q = PyUnicode_1BYTE_DATA(s);
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
        *q++ = alphabet[v >> 18];
        *q++ = alphabet[(v >> 12) & 63];
        *q++ = alphabet[(v >> 6) & 63];
        *q++ = alphabet[v & 63];
    }
    if (rest) {
        uint32_t v = (uint32_t)data[i] << 16 | (rest == 2 ? (uint32_t)data[i + 1] << 8 : 0);
        *q++ = alphabet[v >> 18];
        *q++ = alphabet[(v >> 12) & 63];
        if (rest == 2) *q++ = alphabet[(v >> 6) & 63];
        if (pad) {
            if (rest == 1) *q++ = '=';
            *q++ = '=';
        }
    }
    return s;
}

/* The 16 bytes of a uuid.UUID, taken only when its int is a plain int in range. */
static int uuid_raw(PyObject *v, unsigned char out[16]) {
    if (!Py_IS_TYPE(v, uuid_type)) return -1;
    PyObject *i = SLOT(v, uuid_int_off);
    if (i == NULL || !PyLong_CheckExact(i) || _PyLong_Sign(i) < 0 || _PyLong_NumBits(i) > 128)
        return -1;
    return _PyLong_AsByteArray((PyLongObject *)i, out, 16, 0, 0);
}

static PyObject *json_uuid(PyObject *v) {
    unsigned char raw[16];
    if (uuid_raw(v, raw) < 0) return NULL;
    return b64_text(raw, 16, B64URL, 0);
}

/* What base64.b64encode takes and what it sees: bytes, bytearray, or a flat byte view. */
static PyObject *json_bytes(PyObject *v) {
    if (PyBytes_Check(v))
        return b64_text((const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), B64, 1);
    if (!PyByteArray_Check(v) && !PyMemoryView_Check(v)) return NULL;
    if (PyMemoryView_Check(v)) {
        Py_buffer *b = PyMemoryView_GET_BUFFER(v);
        if (b->ndim != 1 || b->itemsize != 1 || !PyBuffer_IsContiguous(b, 'C')) return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *s = b64_text(view.buf, view.len, B64, 1);
    PyBuffer_Release(&view);
    return s;
}

static PyObject *to_json_struct(JProg *jp, PyObject *o);

static PyObject *to_json_item(int kind, JProg *sub, PyObject *v) {
    if (kind <= K_BOOL || kind == K_STRING) return Py_NewRef(v); /* as it is, unchecked */
    if (kind == K_UUID) return json_uuid(v);
    if (kind == K_BYTES) return json_bytes(v);
    return to_json_struct(sub, v);
}

static PyObject *to_json_value(JField *f, PyObject *v) {
    Op *op = f->op;
    int k = op->kind;
    if (k <= K_BOOL || k == K_STRING) return Py_NewRef(v);
    if (v == Py_None && f->nullable) return Py_NewRef(v);
    if (k != K_ARRAY) return to_json_item(k, f->sub, v);
    int is_list = PyList_Check(v);
    if (!is_list && !PyTuple_Check(v)) return NULL;
    Py_ssize_t n = Py_SIZE(v);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_SIZE(v) != n) { Py_DECREF(out); return NULL; } /* changed by Python code */
        PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
        Py_INCREF(item);
        PyObject *x = to_json_item(op->elem, f->sub, item);
        Py_DECREF(item);
        if (x == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *to_json_struct(JProg *jp, PyObject *o) {
    if (!Py_IS_TYPE(o, jp->prog->cls)) return NULL;
    /* Sized for every field up front: growing a dict rebuilds its table each time. */
    PyObject *d = _PyDict_NewPresized(jp->n);
    if (d == NULL) return NULL;
    for (Py_ssize_t i = 0; i < jp->n; i++) {
        JField *f = &jp->fields[i];
        if (f->op->kind == K_ABSENT) continue;
        PyObject *v = SLOT(o, f->op->off);
        if (v == NULL) goto fail;
        Py_INCREF(v);
        if (f->tagged) {
            int r = differs(v, f->op->dcmp);
            if (r <= 0) {
                Py_DECREF(v);
                if (r < 0) goto fail;
                continue;
            }
        }
        PyObject *x = to_json_value(f, v);
        Py_DECREF(v);
        if (x == NULL) goto fail;
        int r = PyDict_SetItem(d, f->key, x);
        Py_DECREF(x);
        if (r < 0) goto fail;
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* -- from_json */

/* Base64 digit values (-1: not a digit). urlsafe_b64decode maps -_ onto +/ and then takes
 * both spellings alike, so the URL-safe table has all four. */
static signed char B64_STD[256], B64_URL[256];

static void init_b64_tables(void) {
    memset(B64_STD, -1, sizeof(B64_STD));
    memset(B64_URL, -1, sizeof(B64_URL));
    for (int i = 0; i < 64; i++) {
        B64_STD[(unsigned char)B64[i]] = (signed char)i;
        B64_URL[(unsigned char)B64[i]] = (signed char)i;
        B64_URL[(unsigned char)B64URL[i]] = (signed char)i;
    }
}

/* Decode the ``n`` data characters of ``s`` (no padding) into ``out``. The bits past the
 * last whole byte are ignored, as binascii does. -1 on a character outside the alphabet. */
static int b64_decode_into(const Py_UCS1 *s, Py_ssize_t n, int url, unsigned char *out) {
    const signed char *table = url ? B64_URL : B64_STD;
    Py_ssize_t i = 0, o = 0;
    for (; i + 4 <= n; i += 4) {
        int a = table[s[i]], b = table[s[i + 1]], c = table[s[i + 2]], d = table[s[i + 3]];
        if ((a | b | c | d) < 0) return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (unsigned char)(v >> 16);
        out[o++] = (unsigned char)(v >> 8);
        out[o++] = (unsigned char)v;
    }
    uint32_t acc = 0;
    int bits = 0;
    for (; i < n; i++) {
        int x = table[s[i]];
        if (x < 0) return -1;
        acc = (acc << 6 | (uint32_t)x) & 0xFFFFFF;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return 0;
}

/* as_uuid's success path: 22 characters of URL-safe base64 (no padding). */
static PyObject *from_json_uuid(PyObject *v) {
    if (!PyUnicode_CheckExact(v) || PyUnicode_GET_LENGTH(v) != 22 ||
        PyUnicode_KIND(v) != PyUnicode_1BYTE_KIND)
        return NULL;
    unsigned char raw[17];
    if (b64_decode_into(PyUnicode_1BYTE_DATA(v), 22, 1, raw) < 0) return NULL;
    return make_uuid(raw);
}

/* as_bytes's success path, kept to canonical text: a multiple of four characters with
 * at most two '=' of padding, exactly as many as the data needs. Other text that
 * b64decode(validate=True) would still take goes to Python. */
static PyObject *from_json_bytes(PyObject *v) {
    if (!PyUnicode_CheckExact(v) || PyUnicode_KIND(v) != PyUnicode_1BYTE_KIND) return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(v);
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(v);
    if (len % 4 != 0) return NULL;
    Py_ssize_t pad = 0;
    if (len > 0 && s[len - 1] == '=') pad = (len > 1 && s[len - 2] == '=') ? 2 : 1;
    Py_ssize_t n = len - pad, size = len / 4 * 3 - pad;
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    if (b == NULL) return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(b);
    if (b64_decode_into(s, n, 0, out) < 0) { Py_DECREF(b); return NULL; }
    return b;
}

static PyObject *from_json_struct(JProg *jp, PyObject *obj);

/* One value read from JSON into the kind ``kind``; the conversions of jsonform's as_*. */
static PyObject *from_json_item(int kind, JProg *sub, PyObject *v) {
    if (kind <= K_INT64 && kind != K_FLOAT64) return PyLong_CheckExact(v) ? Py_NewRef(v) : NULL;
    switch (kind) {
    case K_FLOAT64:
        if (PyFloat_CheckExact(v)) return Py_NewRef(v);
        if (PyLong_CheckExact(v)) {
            double d = PyLong_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) return NULL;
            return PyFloat_FromDouble(d);
        }
        return NULL;
    case K_BOOL: return PyBool_Check(v) ? Py_NewRef(v) : NULL;
    case K_STRING: return PyUnicode_CheckExact(v) ? Py_NewRef(v) : NULL;
    case K_UUID: return from_json_uuid(v);
    case K_BYTES: return from_json_bytes(v);
    case K_STRUCT: return PyDict_CheckExact(v) ? from_json_struct(sub, v) : NULL;
    default: return NULL;
    }
}

static PyObject *from_json_value(JField *f, PyObject *v) {
    Op *op = f->op;
    if (v == Py_None) return f->nullable ? Py_NewRef(v) : NULL;
    if (op->kind != K_ARRAY) return from_json_item(op->kind, f->sub, v);
    if (!PyList_CheckExact(v)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(v);
    /* A plain list is sized up front (its items are backed by the input's); a KeyedList
     * grows, as the class may not take a preallocated length. */
    int append = op->keyed;
    PyObject *out = append ? keyed_type->tp_alloc(keyed_type, 0) : PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_SIZE(v) != n) { Py_DECREF(out); return NULL; }
        PyObject *item = PyList_GET_ITEM(v, i);
        Py_INCREF(item);
        PyObject *x = from_json_item(op->elem, f->sub, item);
        Py_DECREF(item);
        if (x == NULL) { Py_DECREF(out); return NULL; }
        if (!append) {
            PyList_SET_ITEM(out, i, x);
            continue;
        }
        int r = PyList_Append(out, x);
        Py_DECREF(x);
        if (r < 0) { Py_DECREF(out); return NULL; }
    }
    return out;
}

static PyObject *from_json_struct(JProg *jp, PyObject *obj) {
    Prog *p = jp->prog;
    PyObject *o = p->cls->tp_alloc(p->cls, 0);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < jp->n; i++) {
        JField *f = &jp->fields[i];
        PyObject *v;
        if (f->op->kind == K_ABSENT) {
            v = new_default(f->op);
        } else {
            PyObject *item = PyDict_GetItemWithError(obj, f->key);
            if (item == NULL) {
                if (PyErr_Occurred() || !f->tagged) goto fail;
                v = new_default(f->op);
            } else {
                Py_INCREF(item);
                v = from_json_value(f, item);
                Py_DECREF(item);
            }
        }
        if (v == NULL) goto fail;
        set_slot(o, f->op->off, v);
    }
    PyObject *unknown = PyTuple_New(0);
    if (unknown == NULL) goto fail;
    set_slot(o, p->unknown_off, unknown);
    return o;
fail:
    Py_DECREF(o);
    return NULL;
}

/* -- JsonForm objects */

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_versions;
    JProg **by_version;   /* NULL where the version keeps the Python converters */
    PyObject *py_to, *py_from, *cls;
} JsonForm;

static void jsonform_dealloc(JsonForm *self) {
    PyMem_Free(self->by_version);
    Py_XDECREF(self->py_to);
    Py_XDECREF(self->py_from);
    Py_XDECREF(self->cls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *jsonform_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *cls, *table, *codecs, *to, *from;
    if (!PyArg_ParseTuple(args, "O!OO!OO:JsonForm", &PyType_Type, &cls, &table, &PyDict_Type,
                          &codecs, &to, &from))
        return NULL;
    Py_ssize_t n_versions = 0;
    JProg **by_version = table_programs(cls, table, codecs, &n_versions, NULL);
    if (by_version == NULL) return NULL;
    JsonForm *self = (JsonForm *)type->tp_alloc(type, 0);
    if (self == NULL) { PyMem_Free(by_version); return NULL; }
    self->cls = Py_NewRef(cls);
    self->py_to = Py_NewRef(to);
    self->py_from = Py_NewRef(from);
    self->n_versions = n_versions;
    self->by_version = by_version;
    return (PyObject *)self;
}

static JProg *json_program(JsonForm *self, PyObject *version) {
    if (!PyLong_CheckExact(version)) return NULL;
    Py_ssize_t v = PyLong_AsSsize_t(version);
    if (v < 0 || v >= self->n_versions) { PyErr_Clear(); return NULL; }
    return self->by_version[v];
}

static PyObject *json_fall_back(PyObject *fn, PyObject *const *args) {
    PyErr_Clear();
    n_json_fallbacks++;
    return PyObject_Vectorcall(fn, args, 2, NULL);
}

static PyObject *jsonform_to_json(JsonForm *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "to_json(obj, version)");
        return NULL;
    }
    JProg *jp = json_program(self, args[1]);
    PyObject *r = jp == NULL ? NULL : to_json_struct(jp, args[0]);
    return r != NULL ? r : json_fall_back(self->py_to, args);
}

static PyObject *jsonform_from_json(JsonForm *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "from_json(obj, version)");
        return NULL;
    }
    JProg *jp = json_program(self, args[1]);
    PyObject *r = NULL;
    if (jp != NULL && PyDict_CheckExact(args[0])) r = from_json_struct(jp, args[0]);
    return r != NULL ? r : json_fall_back(self->py_from, args);
}

static PyObject *jsonform_versions(JsonForm *self, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t v = 0; v < self->n_versions; v++) {
        if (self->by_version[v] == NULL) continue;
        PyObject *x = PyLong_FromSsize_t(v);
        if (x == NULL || PyList_Append(out, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(x);
    }
    return out;
}

static PyMethodDef jsonform_methods[] = {
    {"to_json", (PyCFunction)(void (*)(void))jsonform_to_json, METH_FASTCALL,
     "to_json(obj, version) -> dict, as the generated Python converter"},
    {"from_json", (PyCFunction)(void (*)(void))jsonform_from_json, METH_FASTCALL,
     "from_json(obj, version) -> struct, as the generated Python converter"},
    {"versions", (PyCFunction)jsonform_versions, METH_NOARGS,
     "The versions converted here (the others run the Python converters)"},
    {NULL}
};

static PyMemberDef jsonform_members[] = {
    {"python_to_json", T_OBJECT, offsetof(JsonForm, py_to), READONLY,
     "the generated Python to_json converter"},
    {"python_from_json", T_OBJECT, offsetof(JsonForm, py_from), READONLY,
     "the generated Python from_json converter"},
    {NULL}
};

static PyObject *jsonform_repr(JsonForm *self) {
    return PyUnicode_FromFormat("<native JSON form of %s>", ((PyTypeObject *)self->cls)->tp_name);
}

static PyTypeObject JsonFormType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkagen.runtime._native.JsonForm",
    .tp_basicsize = sizeof(JsonForm),
    .tp_dealloc = (destructor)jsonform_dealloc,
    .tp_repr = (reprfunc)jsonform_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JsonForm(cls, table, {version: Codec}, py_to_json, py_from_json): Kafka's JSON "
              "converter form of a struct's compiled layouts.",
    .tp_methods = jsonform_methods,
    .tp_members = jsonform_members,
    .tp_new = jsonform_new,
};

static PyObject *json_fallbacks(PyObject *mod, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(n_json_fallbacks);
}

/* ------------------------------------------------------------------ end of JSON form */

/* ------------------------------------------------------------------ module */

static PyObject *configure(PyObject *mod, PyObject *args) {
    PyObject *keyed, *base, *derr, *unsup;
    if (!PyArg_ParseTuple(args, "O!O!O!O:configure", &PyType_Type, &keyed, &PyType_Type, &base,
                          &PyType_Type, &derr, &unsup))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)derr, (PyTypeObject *)PyExc_ValueError) ||
        !PyCallable_Check(unsup)) {
        PyErr_SetString(PyExc_TypeError,
                        "configure(KeyedList, Struct, DecodeError, unsupported): DecodeError is "
                        "a ValueError and unsupported a callable");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)keyed, &PyList_Type)) {
        PyErr_SetString(PyExc_TypeError, "configure(): KeyedList is a list");
        return NULL;
    }
    Py_XSETREF(keyed_type, (PyTypeObject *)Py_NewRef(keyed));
    Py_XSETREF(struct_base, (PyTypeObject *)Py_NewRef(base));
    Py_XSETREF(decode_error, Py_NewRef(derr));
    Py_XSETREF(unsupported_fn, Py_NewRef(unsup));
    Py_RETURN_NONE;
}

static PyObject *fallbacks(PyObject *mod, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(n_fallbacks);
}

/* ---------------------------------------------------------------- record batches */

/* A zigzag varint of at most max_bytes bytes (5 or 10) at *pos, bounded by end, read as
   Kafka reads it (bits past the type's width dropped). 0 when it runs past end or is too
   long. */
static int scan_varint(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, int max_bytes,
                       int64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 7 * max_bytes; shift += 7) {
        if (*pos >= end) return 0;
        unsigned char b = buf[(*pos)++];
        value |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (max_bytes == 5) {
                uint32_t v = (uint32_t)value;
                *out = (int64_t)(int32_t)((v >> 1) ^ (0u - (v & 1)));
            } else {
                *out = (int64_t)((value >> 1) ^ (0 - (value & 1)));
            }
            return 1;
        }
    }
    return 0;
}

/* A key, value or header value: a length (negative: null) and that many bytes. */
static int scan_bytes(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, int *is_null) {
    int64_t n;
    if (!scan_varint(buf, pos, end, 5, &n)) return 0;
    *is_null = n < 0;
    if (n < 0) return 1;
    if (n > end - *pos) return 0;
    *pos += n;
    return 1;
}

/* scan_records(data, count, base_timestamp): what validating a produced batch needs of its
   records, read without making them (records.py's _parse_records is the reference), or None
   when they do not parse as exactly count records (the caller re-reads them in Python for
   the error) or a timestamp overflows int64. */
static PyObject *scan_records(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    long long count, base_ts;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "scan_records(data, count, base_timestamp)");
        return NULL;
    }
    count = PyLong_AsLongLong(args[1]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    base_ts = PyLong_AsLongLong(args[2]);
    if (base_ts == -1 && PyErr_Occurred()) return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = view.buf;
    Py_ssize_t end = view.len, pos = 0;
    int64_t max_ts = -1, max_ts_delta = -1, min_real = 0, max_real = 0;
    long long i = 0, null_keys = 0, real = 0;
    int consecutive = 1, ok = count >= 0;
    Py_BEGIN_ALLOW_THREADS
    for (; ok && i < count; i++) {
        int64_t length, delta_ts, delta_offset, headers, ts;
        int is_null;
        if (!scan_varint(buf, &pos, end, 5, &length) || length <= 0 || length > end - pos) {
            ok = 0;
            break;
        }
        Py_ssize_t rend = pos + (Py_ssize_t)length;
        pos += 1; /* record attributes: unused in v2 */
        if (!scan_varint(buf, &pos, rend, 10, &delta_ts) ||
            !scan_varint(buf, &pos, rend, 5, &delta_offset) ||
            !scan_bytes(buf, &pos, rend, &is_null)) {
            ok = 0;
            break;
        }
        null_keys += is_null;
        if (!scan_bytes(buf, &pos, rend, &is_null) || !scan_varint(buf, &pos, rend, 5, &headers) ||
            headers < 0) {
            ok = 0;
            break;
        }
        for (int64_t h = 0; ok && h < headers; h++) {
            int64_t n;
            if (!scan_varint(buf, &pos, rend, 5, &n) || n < 0 || n > rend - pos) ok = 0;
            else {
                pos += n;
                ok = scan_bytes(buf, &pos, rend, &is_null);
            }
        }
        if (!ok || pos != rend || __builtin_add_overflow((int64_t)base_ts, delta_ts, &ts)) {
            ok = 0;
            break;
        }
        if (delta_offset != i) consecutive = 0;
        if (ts > max_ts) {
            max_ts = ts;
            max_ts_delta = delta_offset;
        }
        if (ts != -1) {
            if (real == 0 || ts < min_real) min_real = ts;
            if (real == 0 || ts > max_real) max_real = ts;
            real++;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!ok || pos != end) Py_RETURN_NONE;
    if (real == 0)
        return Py_BuildValue("LLOOOL", (long long)max_ts, (long long)max_ts_delta,
                             consecutive ? Py_True : Py_False, Py_None, Py_None, null_keys);
    return Py_BuildValue("LLOLLL", (long long)max_ts, (long long)max_ts_delta,
                         consecutive ? Py_True : Py_False, (long long)min_real,
                         (long long)max_real, null_keys);
}

/* Java's String.hashCode of a str: over its UTF-16 code units (a character past the BMP is
   its surrogate pair), wrapping at 32 bits. Coordinators place every group and
   transactional id with it, listings every id on every page: in C it needs no cache. */
static PyObject *java_hash(PyObject *mod, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "java_hash takes a str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    uint32_t h = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xFFFF) {
            c -= 0x10000;
            h = 31 * h + (0xD800 + (c >> 10));
            h = 31 * h + (0xDC00 + (c & 0x3FF));
        } else {
            h = 31 * h + c;
        }
    }
    return PyLong_FromLong((long)(int32_t)h);
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(KeyedList, Struct, DecodeError, unsupported): the runtime's mapKey list and "
     "struct base classes, its decode error and its builder of encode refusals"},
    {"encode_parts", (PyCFunction)(void (*)(void))encode_parts, METH_FASTCALL,
     "encode_parts(message, version, parts_min): the encoding as pieces, large stored "
     "bytes by reference; None to run the Python method"},
    {"encode_method", encode_method, METH_O,
     "encode_method(cls): a compiled encode(version) for the message class cls"},
    {"decode_method", decode_method, METH_O,
     "decode_method(cls): a compiled decode(data, version) bound to the message class cls"},
    {"struct_eq", (PyCFunction)(void (*)(void))struct_eq, METH_FASTCALL,
     "struct_eq(a, b): a generated struct's __eq__ (install through eq_method)"},
    {"fallbacks", fallbacks, METH_NOARGS,
     "How many calls the native codecs handed to the Python codecs (values of the wrong "
     "type or range, exotic buffers...)"},
    {"json_fallbacks", json_fallbacks, METH_NOARGS,
     "How many calls the native JSON converters handed to the Python ones"},
    {"scan_records", (PyCFunction)(void (*)(void))scan_records, METH_FASTCALL,
     "scan_records(data, count, base_timestamp): (max timestamp, its offset delta, offsets "
     "consecutive, lowest and highest timestamp other than -1, null keys) of a batch's "
     "uncompressed records, or None when they do not parse as count records"},
    {"java_hash", java_hash, METH_O,
     "java_hash(s): Java's String.hashCode of s (a signed 32-bit int)"},
    {NULL}
};

/* What the fuzz's compiled builders use of this module (see _native.h). */
static const KafkagenNativeAPI lent_api = {
    KAFKAGEN_NATIVE_API_VERSION, KIND_NAMES, &keyed_type, &uuid_type, unsupported_plan,
    slot_offset, make_uuid, new_default, table_programs,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kafkagen.runtime._native",
    "Compiled, table-driven wire codecs under the generated Python ones.", -1, module_methods,
};

/* The SHA-256 of this file and _native.h as they were compiled (setup.py defines it); the Python side
   refuses a build whose digest differs from the source beside it. */
#ifndef KAFKAGEN_SOURCE_SHA256
#define KAFKAGEN_SOURCE_SHA256 ""
#endif

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", KAFKAGEN_SOURCE_SHA256) < 0) goto error;
    if (PyType_Ready(&CodecType) < 0) goto error;
    if (PyModule_AddObjectRef(m, "Codec", (PyObject *)&CodecType) < 0) goto error;
    if (PyType_Ready(&JsonFormType) < 0) goto error;
    if (PyModule_AddObjectRef(m, "JsonForm", (PyObject *)&JsonFormType) < 0) goto error;
    if ((json_programs = PyDict_New()) == NULL) goto error;
    init_b64_tables();
    PyObject *uuid = PyImport_ImportModule("uuid");
    if (uuid == NULL) goto error;
    uuid_type = (PyTypeObject *)PyObject_GetAttrString(uuid, "UUID");
    PyObject *safe = PyObject_GetAttrString(uuid, "SafeUUID");
    Py_DECREF(uuid);
    if (uuid_type == NULL || safe == NULL) goto error;
    uuid_unknown = PyObject_GetAttrString(safe, "unknown");
    Py_DECREF(safe);
    if (uuid_unknown == NULL) goto error;
    PyObject *name = PyUnicode_FromString("int");
    uuid_int_off = name ? slot_offset(uuid_type, name) : -1;
    Py_XDECREF(name);
    name = PyUnicode_FromString("is_safe");
    uuid_safe_off = name ? slot_offset(uuid_type, name) : -1;
    Py_XDECREF(name);
    if (uuid_int_off < 0 || uuid_safe_off < 0) goto error;
    PyObject *lent = PyCapsule_New((void *)&lent_api, "kafkagen.runtime._native._C_API", NULL);
    if (lent == NULL || PyModule_AddObject(m, "_C_API", lent) < 0) {
        Py_XDECREF(lent);
        goto error;
    }
    /* struct_eq wrapped so that it binds like a function when set as a class's __eq__. */
    PyObject *eq = PyObject_GetAttrString(m, "struct_eq");
    PyObject *eq_method = eq ? PyInstanceMethod_New(eq) : NULL;
    Py_XDECREF(eq);
    if (eq_method == NULL || PyModule_AddObject(m, "eq_method", eq_method) < 0) {
        Py_XDECREF(eq_method);
        goto error;
    }
    encoders_name = PyUnicode_InternFromString("_encoders");
    python_encode_name = PyUnicode_InternFromString("_encode_in_python");
    decoders_name = PyUnicode_InternFromString("_decoders");
    python_decode_name = PyUnicode_InternFromString("_decode_in_python");
    reason_name = PyUnicode_InternFromString("reason");
    offset_name = PyUnicode_InternFromString("offset");
    if (encoders_name == NULL || python_encode_name == NULL || decoders_name == NULL ||
        python_decode_name == NULL || reason_name == NULL || offset_name == NULL)
        goto error;
    empty_list = PyList_New(0);
    programs = PyDict_New();
    why_default = PyUnicode_InternFromString("non-default value");
    why_null = PyUnicode_InternFromString("null value");
    why_tags = PyUnicode_InternFromString("unknown tagged fields");
    if (empty_list == NULL || programs == NULL || why_default == NULL || why_null == NULL ||
        why_tags == NULL)
        goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
