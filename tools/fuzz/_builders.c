/* The fuzz's random messages, built in C from the accelerator's compiled field tables.
 *
 * RandomBuilder(cls, py_random, table, codecs) draws field by field in spec order, as the
 * Python builder of kafkagen.fuzz.builders does, and so builds for a RandomGen over
 * random.Random exactly what py_random builds: the same objects, through the same calls
 * of the generator's random() and getrandbits() (uniform() on its rare path), so the PRNG,
 * budget and unknown-tag count end in the same state. The thresholds of RandomGen's
 * methods are mirrored here; its tables are read from it (configure). Any other generator,
 * such as the Hypothesis one, goes to py_random.
 * No draw computes a * b + c in floating point, so no compiler contraction into a fused
 * multiply-add can make a value differ from the one Python computes.
 *
 * The compiled layouts and field tables are kafkagen.runtime._native's (see _native.h):
 * this module only walks them, so the runtime every user imports holds no random code.
 */
#include "_native.h"
#include <structmember.h>
#include <string.h>

static const KafkagenNativeAPI *api; /* set at import, from kafkagen.runtime._native */
#define KIND_NAMES (api->kind_names)
#define keyed_type (*api->keyed_type)
#define uuid_type (*api->uuid_type)
#define unsupported_plan(what) (api->unsupported_plan(what))
#define slot_offset(cls, name) (api->slot_offset((cls), (name)))
#define make_uuid(raw) (api->make_uuid(raw))
#define new_default(op) (api->new_default(op))
#define table_programs(cls, table, codecs, n, usable) \
    (api->table_programs((cls), (table), (codecs), (n), (usable)))

/* RandomGen's constants, read from kafkagen.fuzz.randomgen by configure(). */
static PyTypeObject *randomgen_type; /* RandomGen */
static PyTypeObject *pyrandom_type;  /* random.Random: the only PRNG class the C side drives */
static Py_ssize_t gen_rng_off = -1, gen_budget_off = -1, gen_unknown_off = -1;
static PyObject *s_random, *s_getrandbits;
typedef struct {
    PyObject *edges[6];
    long long small_lo, lo;
    double small_scale;
    int bits;
} IntKind;
static IntKind int_kinds[K_INT64 + 1]; /* K_INT8 .. K_INT64; K_FLOAT64 and K_BOOL unused */
static PyObject *edge_floats;        /* tuple */
static PyObject *zero_uuid;
#define MAX_ALPHABETS 16
static Py_UCS4 alphabet_map[MAX_ALPHABETS][256]; /* byte -> character, per alphabet */
static int alphabet_ascii[MAX_ALPHABETS];
static int alphabet_count, plain_below;

typedef struct {
    PyObject *rng, *random, *getrandbits; /* bound methods, fetched once per message */
    long long budget, unknown;
} RCtx;

static int draw(RCtx *c, double *out) {
    PyObject *r = PyObject_CallNoArgs(c->random);
    if (r == NULL) return -1;
    *out = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *draw_bits(RCtx *c, long long bits) {
    PyObject *k = PyLong_FromLongLong(bits);
    if (k == NULL) return NULL;
    PyObject *x = PyObject_CallOneArg(c->getrandbits, k);
    Py_DECREF(k);
    if (x != NULL && !PyLong_Check(x)) {
        Py_DECREF(x);
        PyErr_SetString(PyExc_TypeError, "getrandbits() returned a non-int");
        return NULL;
    }
    return x;
}

/* getrandbits(8 * n) as n little-endian bytes, into out (int.to_bytes(n, "little")). */
static int draw_bytes_into(RCtx *c, unsigned char *out, Py_ssize_t n) {
    PyObject *x = draw_bits(c, 8 * (long long)n);
    if (x == NULL) return -1;
    int r = _PyLong_AsByteArray((PyLongObject *)x, out, (size_t)n, 1, 0);
    Py_DECREF(x);
    return r;
}

static PyObject *draw_bytes(RCtx *c, Py_ssize_t n) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, n);
    if (b == NULL) return NULL;
    if (draw_bytes_into(c, (unsigned char *)PyBytes_AS_STRING(b), n) < 0) {
        Py_DECREF(b);
        return NULL;
    }
    return b;
}

static PyObject *item_of(PyObject *tuple, double index) {
    Py_ssize_t i = (Py_ssize_t)index; /* index >= 0: truncation is int()'s */
    if (i >= PyTuple_GET_SIZE(tuple)) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return NULL;
    }
    return Py_NewRef(PyTuple_GET_ITEM(tuple, i));
}

static PyObject *rnd_int(RCtx *c, int kind) {
    IntKind *k = &int_kinds[kind];
    double r;
    if (draw(c, &r) < 0) return NULL;
    if (r < 0.3) {
        Py_ssize_t i = (Py_ssize_t)(r * 20.0); /* r / 0.3 * 6 */
        if (i >= 6) {
            PyErr_SetString(PyExc_IndexError, "tuple index out of range");
            return NULL;
        }
        return Py_NewRef(k->edges[i]);
    }
    if (r < 0.6) return PyLong_FromLongLong(k->small_lo + (long long)((r - 0.3) * k->small_scale));
    PyObject *x = draw_bits(c, k->bits);
    if (x == NULL) return NULL;
    unsigned long long u = PyLong_AsUnsignedLongLong(x);
    Py_DECREF(x);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    uint64_t sum = (uint64_t)u + (uint64_t)k->lo; /* lo + x, which fits the kind's range */
    int64_t v;
    memcpy(&v, &sum, sizeof(v));
    return PyLong_FromLongLong(v);
}

static PyObject *rnd_float(RCtx *c) {
    double r;
    if (draw(c, &r) < 0) return NULL;
    if (r < 0.3) return item_of(edge_floats, r * ((double)PyTuple_GET_SIZE(edge_floats) / 0.3));
    return PyObject_CallMethod(c->rng, "uniform", "dd", -1e12, 1e12);
}

/* random() < below: bool(), is_null() and present(). -1 on error. */
static int chance(RCtx *c, double below) {
    double r;
    if (draw(c, &r) < 0) return -1;
    return r < below;
}

static PyObject *rnd_str(RCtx *c) {
    double r;
    if (draw(c, &r) < 0) return NULL;
    if (r < 0.1) return PyUnicode_New(0, 0);
    Py_ssize_t n = r < 0.85 ? 1 + (Py_ssize_t)((r - 0.1) * 16.0)
                            : 13 + (Py_ssize_t)((r - 0.85) * 1920.0);
    unsigned char raw[512]; /* n <= 300; the low byte picks the alphabet */
    if (n + 1 > (Py_ssize_t)sizeof(raw)) {
        PyErr_SetString(PyExc_SystemError, "string draw too long");
        return NULL;
    }
    if (draw_bytes_into(c, raw, n + 1) < 0) return NULL;
    int pick = raw[0];
    int a = pick < plain_below ? 0 : pick % alphabet_count;
    const Py_UCS4 *map = alphabet_map[a];
    if (alphabet_ascii[a]) {
        PyObject *s = PyUnicode_New(n, 127);
        if (s == NULL) return NULL;
        Py_UCS1 *d = PyUnicode_1BYTE_DATA(s);
        for (Py_ssize_t i = 0; i < n; i++) d[i] = (Py_UCS1)map[raw[i + 1]];
        return s;
    }
    Py_UCS4 text[512];
    for (Py_ssize_t i = 0; i < n; i++) text[i] = map[raw[i + 1]];
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, text, n); /* narrowest kind */
}

static PyObject *rnd_bytes(RCtx *c) {
    double r;
    if (draw(c, &r) < 0) return NULL;
    if (r < 0.15) return PyBytes_FromStringAndSize(NULL, 0);
    Py_ssize_t n = r < 0.85 ? 1 + (Py_ssize_t)((r - 0.15) * (16 / 0.7))
                            : 17 + (Py_ssize_t)((r - 0.85) * (384 / 0.15));
    return draw_bytes(c, n);
}

static PyObject *rnd_uuid(RCtx *c) {
    double r;
    if (draw(c, &r) < 0) return NULL;
    if (r < 0.1) return Py_NewRef(zero_uuid);
    unsigned char raw[16]; /* little-endian bytes of the draw, read back as big-endian */
    if (draw_bytes_into(c, raw, 16) < 0) return NULL;
    return make_uuid(raw);
}

/* count(): -1 on error. */
static Py_ssize_t rnd_count(RCtx *c) {
    double r;
    if (draw(c, &r) < 0) return -1;
    if (r < 0.2 || c->budget <= 0) return 0;
    long long n = r < 0.97 ? 1 + (long long)((r - 0.2) * (4 / 0.77))
                           : 127 + (long long)((r - 0.97) * (14 / 0.03));
    if (n > c->budget) n = c->budget;
    c->budget -= n;
    return (Py_ssize_t)n;
}

static PyObject *rnd_unknown_tags(RCtx *c, long long first_free) {
    double r;
    if (draw(c, &r) < 0) return NULL;
    if (r >= 0.1) return PyTuple_New(0);
    c->unknown++;
    if (draw(c, &r) < 0) return NULL;
    long long k = 1 + (long long)(r * 3);
    /* RandomGen's rejection sampling: 6-bit draws, kept when below 40 and new. */
    long picked[3];
    long long n_picked = 0;
    while (n_picked < k) {
        PyObject *x = draw_bits(c, 6);
        if (x == NULL) return NULL;
        long t = PyLong_AsLong(x);
        Py_DECREF(x);
        if (t == -1 && PyErr_Occurred()) return NULL;
        int fresh = t < 40;
        for (long long i = 0; i < n_picked && fresh; i++) fresh = picked[i] != t;
        if (fresh) picked[n_picked++] = t;
    }
    for (long long i = 1; i < n_picked; i++) /* sorted(picked): at most three */
        for (long long j = i; j > 0 && picked[j - 1] > picked[j]; j--) {
            long t = picked[j];
            picked[j] = picked[j - 1];
            picked[j - 1] = t;
        }
    PyObject *out = PyTuple_New((Py_ssize_t)n_picked);
    if (out == NULL) return NULL;
    for (long long i = 0; i < n_picked; i++) {
        PyObject *b = NULL;
        if (draw(c, &r) == 0) b = draw_bytes(c, (Py_ssize_t)(r * 21));
        PyObject *tag = b ? PyLong_FromLongLong(first_free + picked[i]) : NULL;
        PyObject *item = tag ? PyTuple_Pack(2, tag, b) : NULL;
        Py_XDECREF(tag);
        Py_XDECREF(b);
        if (item == NULL) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    return out;
}

static PyObject *rnd_struct(RCtx *c, JProg *jp);

static PyObject *rnd_scalar(RCtx *c, int kind, JProg *sub) {
    if (kind <= K_INT64 && kind != K_FLOAT64 && kind != K_BOOL) return rnd_int(c, kind);
    switch (kind) {
    case K_FLOAT64: return rnd_float(c);
    case K_BOOL: {
        int t = chance(c, 0.5);
        return t < 0 ? NULL : Py_NewRef(t ? Py_True : Py_False);
    }
    case K_UUID: return rnd_uuid(c);
    case K_STRING: return rnd_str(c);
    case K_BYTES: return rnd_bytes(c);
    default: return rnd_struct(c, sub);
    }
}

static PyObject *rnd_value(RCtx *c, Op *op, JProg *sub) {
    int k = op->kind;
    if (op->nullable) {
        int null = chance(c, 0.15);
        if (null < 0) return NULL;
        if (null) return Py_NewRef(Py_None);
    }
    if (k != K_ARRAY) return rnd_scalar(c, k, sub);
    Py_ssize_t n = rnd_count(c);
    if (n < 0) return NULL;
    PyObject *list = op->keyed ? keyed_type->tp_alloc(keyed_type, 0) : PyList_New(n);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = rnd_scalar(c, op->elem, sub);
        if (v == NULL) { Py_DECREF(list); return NULL; }
        if (op->keyed) {
            int r = PyList_Append(list, v);
            Py_DECREF(v);
            if (r < 0) { Py_DECREF(list); return NULL; }
        } else {
            PyList_SET_ITEM(list, i, v);
        }
    }
    return list;
}

/* One struct, field by field in spec order as the generated Python builder draws: a field
 * the version lacks takes its default without a draw, a tagged one is present() first. */
static PyObject *rnd_struct(RCtx *c, JProg *jp) {
    Prog *p = jp->prog;
    PyObject *o = p->cls->tp_alloc(p->cls, 0);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < jp->n; i++) {
        JField *f = &jp->fields[i];
        Op *op = f->op;
        PyObject *v;
        if (op->kind == K_ABSENT) {
            v = new_default(op);
        } else if (f->tagged) {
            int present = chance(c, 0.5);
            v = present < 0 ? NULL : present ? rnd_value(c, op, f->sub) : new_default(op);
        } else {
            v = rnd_value(c, op, f->sub);
        }
        if (v == NULL) goto fail;
        SLOT(o, op->off) = v; /* each slot is set once, from NULL (see random_ready) */
    }
    PyObject *unknown = p->flexible ? rnd_unknown_tags(c, jp->first_free) : PyTuple_New(0);
    if (unknown == NULL) goto fail;
    SLOT(o, p->unknown_off) = unknown;
    return o;
fail:
    Py_DECREF(o);
    return NULL;
}

/* Whether the table names every op of the layout, so every slot of a built object is set,
 * here and in every nested struct. The table's fields map to distinct slots, so as many
 * fields as ops means each op once. */
static int random_ready(JProg *jp, int depth) {
    Prog *p = jp->prog;
    if (depth > 100 || jp->n != p->n_ops + p->n_tags) return 0;
    for (Py_ssize_t i = 0; i < jp->n; i++) {
        JField *f = &jp->fields[i];
        int k = f->op->kind;
        if (k == K_STRUCT || (k == K_ARRAY && f->op->elem == K_STRUCT))
            if (f->sub == NULL || !random_ready(f->sub, depth + 1)) return 0;
    }
    return 1;
}

/* A class's random(gen, version) builder: the Python one for any other generator. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *cls, *py_random;
    Py_ssize_t n_versions;
    JProg **by_version; /* NULL where the version keeps the Python builder */
} Builder;

static PyObject *python_builder(Builder *self, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) {
    return PyObject_Vectorcall(self->py_random, args, nargsf, kwnames);
}

/* Reads a RandomGen int slot into *out: 0, or -1 when absent or not a plain int in range. */
static int gen_int(PyObject *gen, Py_ssize_t off, long long *out) {
    PyObject *v = SLOT(gen, off);
    if (v == NULL || !PyLong_CheckExact(v)) return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
    return 0;
}

static int gen_store(PyObject *gen, Py_ssize_t off, long long old, long long now) {
    if (now == old) return 0;
    PyObject *v = PyLong_FromLongLong(now);
    if (v == NULL) return -1;
    set_slot(gen, off, v);
    return 0;
}

static PyObject *builder_call(Builder *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL || randomgen_type == NULL ||
        !Py_IS_TYPE(args[0], randomgen_type) || !PyLong_CheckExact(args[1]))
        return python_builder(self, args, nargsf, kwnames);
    PyObject *gen = args[0];
    Py_ssize_t version = PyLong_AsSsize_t(args[1]);
    if (version == -1 && PyErr_Occurred()) PyErr_Clear();
    PyObject *rng = SLOT(gen, gen_rng_off);
    RCtx c = {NULL, NULL, NULL, 0, 0};
    if (version < 0 || version >= self->n_versions || self->by_version[version] == NULL ||
        rng == NULL || !Py_IS_TYPE(rng, pyrandom_type) ||
        gen_int(gen, gen_budget_off, &c.budget) < 0 || gen_int(gen, gen_unknown_off, &c.unknown) < 0)
        return python_builder(self, args, nargsf, kwnames);
    long long budget0 = c.budget, unknown0 = c.unknown;
    c.rng = Py_NewRef(rng);
    c.random = PyObject_GetAttr(rng, s_random);
    c.getrandbits = c.random ? PyObject_GetAttr(rng, s_getrandbits) : NULL;
    PyObject *o = c.getrandbits ? rnd_struct(&c, self->by_version[version]) : NULL;
    Py_DECREF(c.rng);
    Py_XDECREF(c.random);
    Py_XDECREF(c.getrandbits);
    /* As the Python builder leaves them, also when a draw raised part way. */
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    if (gen_store(gen, gen_budget_off, budget0, c.budget) < 0 ||
        gen_store(gen, gen_unknown_off, unknown0, c.unknown) < 0) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        Py_XDECREF(o);
        return NULL;
    }
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return o;
}

static void builder_dealloc(Builder *self) {
    Py_XDECREF(self->cls);
    Py_XDECREF(self->py_random);
    PyMem_Free(self->by_version);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int random_usable(JProg *jp) { return random_ready(jp, 0); }

static PyObject *builder_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *cls, *py_random, *table, *codecs;
    if (!PyArg_ParseTuple(args, "O!OOO!:RandomBuilder", &PyType_Type, &cls, &py_random, &table,
                          &PyDict_Type, &codecs))
        return NULL;
    if (randomgen_type == NULL) {
        PyErr_SetString(PyExc_NotImplementedError, "configure() was not called");
        return NULL;
    }
    Py_ssize_t n_versions = 0;
    JProg **by_version = table_programs(cls, table, codecs, &n_versions, random_usable);
    if (by_version == NULL) return NULL;
    Builder *self = (Builder *)type->tp_alloc(type, 0);
    if (self == NULL) { PyMem_Free(by_version); return NULL; }
    self->vectorcall = (vectorcallfunc)builder_call;
    self->cls = Py_NewRef(cls);
    self->py_random = Py_NewRef(py_random);
    self->n_versions = n_versions;
    self->by_version = by_version;
    return (PyObject *)self;
}

static PyMemberDef builder_members[] = {
    {"python_random", T_OBJECT, offsetof(Builder, py_random), READONLY,
     "the Python random builder of the same class"},
    {NULL}
};

static PyObject *builder_repr(Builder *self) {
    return PyUnicode_FromFormat("<native random builder of %s>",
                                ((PyTypeObject *)self->cls)->tp_name);
}

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkagen.fuzz._builders.RandomBuilder",
    .tp_basicsize = sizeof(Builder),
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_repr = (reprfunc)builder_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Builder, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "RandomBuilder(cls, py_random, table, {version: Codec}): cls's random builder\n"
              "for RandomGen over random.Random; any other generator gets py_random.",
    .tp_members = builder_members,
    .tp_new = builder_new,
};

/* configure(randomgen_module): RandomGen and the tables its methods draw from. */
static int attr_slot(PyTypeObject *t, const char *name, Py_ssize_t *off) {
    PyObject *s = PyUnicode_FromString(name);
    if (s == NULL) return -1;
    *off = slot_offset(t, s);
    Py_DECREF(s);
    return *off < 0 ? -1 : 0;
}

static int read_tables(PyObject *m) {
    int rc = -1;
    PyObject *gen = PyObject_GetAttrString(m, "RandomGen");
    PyObject *ints = PyObject_GetAttrString(m, "_INTS");
    PyObject *floats = PyObject_GetAttrString(m, "_EDGE_FLOATS");
    PyObject *ascii = PyObject_GetAttrString(m, "_ASCII_TABLES");
    PyObject *text = PyObject_GetAttrString(m, "_TEXT_TABLES");
    PyObject *plain = PyObject_GetAttrString(m, "_PLAIN_BELOW");
    PyObject *count = PyObject_GetAttrString(m, "_ALPHABET_COUNT");
    PyObject *zero = PyObject_GetAttrString(m, "_ZERO_UUID");
    PyObject *random_mod = PyImport_ImportModule("random");
    PyObject *rtype = random_mod ? PyObject_GetAttrString(random_mod, "Random") : NULL;
    if (!gen || !ints || !floats || !ascii || !text || !plain || !count || !zero || !rtype)
        goto done;
    if (!PyType_Check(gen) || !PyType_Check(rtype) || !PyDict_Check(ints) ||
        !PyTuple_Check(floats) || PyTuple_GET_SIZE(floats) == 0 || !PyTuple_Check(ascii) ||
        !PyTuple_Check(text) || !Py_IS_TYPE(zero, uuid_type)) {
        unsupported_plan("these random tables");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(floats); i++)
        if (!PyFloat_CheckExact(PyTuple_GET_ITEM(floats, i))) {
            unsupported_plan("a non-float edge value");
            goto done;
        }
    for (int k = K_INT8; k <= K_INT64; k++) {
        if (k == K_FLOAT64 || k == K_BOOL) continue;
        PyObject *e = PyDict_GetItemString(ints, KIND_NAMES[k]);
        PyObject *edges = e && PyTuple_Check(e) && PyTuple_GET_SIZE(e) == 5 ? PyTuple_GET_ITEM(e, 0) : NULL;
        if (edges == NULL || !PyTuple_Check(edges) || PyTuple_GET_SIZE(edges) != 6) {
            unsupported_plan("these integer tables");
            goto done;
        }
        IntKind *ik = &int_kinds[k];
        for (int j = 0; j < 6; j++) Py_XSETREF(ik->edges[j], Py_NewRef(PyTuple_GET_ITEM(edges, j)));
        ik->small_lo = PyLong_AsLongLong(PyTuple_GET_ITEM(e, 1));
        ik->small_scale = PyFloat_AsDouble(PyTuple_GET_ITEM(e, 2));
        ik->lo = PyLong_AsLongLong(PyTuple_GET_ITEM(e, 3));
        long bits = PyLong_AsLong(PyTuple_GET_ITEM(e, 4));
        if (PyErr_Occurred()) goto done;
        if (bits < 1 || bits > 64) { unsupported_plan("an integer width"); goto done; }
        ik->bits = (int)bits;
    }
    long n = PyLong_AsLong(count), below = PyLong_AsLong(plain);
    if (PyErr_Occurred()) goto done;
    if (n < 1 || n > MAX_ALPHABETS || PyTuple_GET_SIZE(ascii) != n || PyTuple_GET_SIZE(text) != n) {
        unsupported_plan("these alphabets");
        goto done;
    }
    for (long a = 0; a < n; a++) {
        PyObject *t = PyTuple_GET_ITEM(ascii, a), *d = PyTuple_GET_ITEM(text, a);
        int is_ascii = t != Py_None;
        if ((is_ascii && (!PyBytes_Check(t) || PyBytes_GET_SIZE(t) != 256)) || !PyDict_Check(d)) {
            unsupported_plan("these alphabet tables");
            goto done;
        }
        alphabet_ascii[a] = is_ascii;
        for (int b = 0; b < 256; b++) {
            if (is_ascii) {
                unsigned char ch = (unsigned char)PyBytes_AS_STRING(t)[b];
                if (ch > 127) { unsupported_plan("a non-ASCII byte table"); goto done; }
                alphabet_map[a][b] = ch;
                continue;
            }
            PyObject *key = PyLong_FromLong(b);
            if (key == NULL) goto done;
            PyObject *ch = PyDict_GetItemWithError(d, key);
            Py_DECREF(key);
            if (ch == NULL || !PyUnicode_Check(ch) || PyUnicode_GET_LENGTH(ch) != 1) {
                if (!PyErr_Occurred()) unsupported_plan("a translation table");
                goto done;
            }
            alphabet_map[a][b] = PyUnicode_READ_CHAR(ch, 0);
        }
    }
    alphabet_count = (int)n;
    plain_below = (int)below;
    PyTypeObject *gt = (PyTypeObject *)gen;
    if (attr_slot(gt, "rng", &gen_rng_off) < 0 || attr_slot(gt, "budget", &gen_budget_off) < 0 ||
        attr_slot(gt, "unknown", &gen_unknown_off) < 0)
        goto done;
    Py_XSETREF(edge_floats, Py_NewRef(floats));
    Py_XSETREF(zero_uuid, Py_NewRef(zero));
    Py_XSETREF(pyrandom_type, (PyTypeObject *)Py_NewRef(rtype));
    Py_XSETREF(randomgen_type, (PyTypeObject *)Py_NewRef(gen)); /* last: it turns the C side on */
    rc = 0;
done:
    Py_XDECREF(gen);
    Py_XDECREF(ints);
    Py_XDECREF(floats);
    Py_XDECREF(ascii);
    Py_XDECREF(text);
    Py_XDECREF(plain);
    Py_XDECREF(count);
    Py_XDECREF(zero);
    Py_XDECREF(random_mod);
    Py_XDECREF(rtype);
    return rc;
}

static PyObject *configure(PyObject *mod, PyObject *m) {
    Py_CLEAR(randomgen_type); /* off until every table is read */
    if (read_tables(m) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_O,
     "configure(kafkagen.fuzz.randomgen): the generator class and tables to mirror"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kafkagen.fuzz._builders",
    "Compiled random-message builders of the fuzz, over the accelerator's field tables.", -1,
    module_methods,
};

/* The SHA-256 of the sources it was compiled from (setup.py defines it); the Python side
   refuses a build whose digest differs from the sources beside it. */
#ifndef KAFKAGEN_SOURCE_SHA256
#define KAFKAGEN_SOURCE_SHA256 ""
#endif

PyMODINIT_FUNC PyInit__builders(void) {
    api = (const KafkagenNativeAPI *)PyCapsule_Import("kafkagen.runtime._native._C_API", 0);
    if (api == NULL) return NULL;
    if (api->version != KAFKAGEN_NATIVE_API_VERSION) {
        PyErr_Format(PyExc_ImportError, "kafkagen.runtime._native lends API version %d, not %d",
                     api->version, KAFKAGEN_NATIVE_API_VERSION);
        return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", KAFKAGEN_SOURCE_SHA256) < 0) goto error;
    if (PyType_Ready(&BuilderType) < 0) goto error;
    if (PyModule_AddObjectRef(m, "RandomBuilder", (PyObject *)&BuilderType) < 0) goto error;
    s_random = PyUnicode_InternFromString("random");
    s_getrandbits = PyUnicode_InternFromString("getrandbits");
    if (s_random == NULL || s_getrandbits == NULL) goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
