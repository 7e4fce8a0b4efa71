/*
 * The learned layer's window sums in C: what learned.Model._window adds up, with the weights
 * in one flat table instead of a dictionary of string objects.
 *
 * Why: in a busy service the rest of each request pushes the guard's data out of the core's
 * caches between two messages, and a dictionary of some 26,000 strings costs a miss or two
 * per word and n-gram read back (docs/benchmarks.md). Here a feature is a 64-bit hash of its
 * code points, and its weight sits beside the hash in an open-addressing table of 16-byte
 * slots: one cache line per feature looked up, no per-word cache to keep, no object made.
 *
 * A feature's identity is its hash. Each step of the hash ((h ^ c) * odd, then h ^= h >> 32)
 * is a bijection of the state for a fixed code point and gives different states for
 * different code points, so two different strings of one length never share a hash; the
 * length is mixed into the seed. Strings of different lengths collide with probability
 * about 2^-64 per pair.
 *
 * Features, as learned.window_features names them:
 *   "=word" (or "=#long" for a word over 40 code points)  -> hash(word, OWN)
 *   n-gram of "<word>", 3 to 5 code points                  -> hash(gram, GRAM)
 *   ("first", "second") word pair                           -> pair(hash(first, PAIR), ...)
 * Markers ("#name") stay with the Python model, which finds them with regular expressions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define SEED_OWN 0x6f776e0000000001ULL
#define SEED_GRAM 0x6772616d00000002ULL
#define SEED_PAIR 0x7061697200000003ULL
#define LONG_WORD 40
#define MIN_GRAM 3
#define MAX_GRAM 5
#define EMPTY 0ULL /* a hash of 0 is moved to 1: 0 marks an empty slot */

static inline uint64_t step(uint64_t h, Py_UCS4 c) {
    h = (h ^ (uint64_t)c) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 32);
}

static inline uint64_t finish(uint64_t h) {
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return h == EMPTY ? 1 : h;
}

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Text;

static inline uint64_t hash_range(uint64_t seed, Text t, Py_ssize_t start, Py_ssize_t n) {
    uint64_t h = seed ^ ((uint64_t)n * 0xD6E8FEB86659FD93ULL);
    for (Py_ssize_t i = start; i < start + n; i++) {
        h = step(h, PyUnicode_READ(t.kind, t.data, i));
    }
    return finish(h);
}

/* A code point of "<word>": the padding, or the word's own. */
static inline Py_UCS4 padded_at(Text t, Py_ssize_t i) {
    if (i == 0) return '<';
    if (i == t.length + 1) return '>';
    return PyUnicode_READ(t.kind, t.data, i - 1);
}

static inline uint64_t hash_padded(Text t, Py_ssize_t start, Py_ssize_t n) {
    uint64_t h = SEED_GRAM ^ ((uint64_t)n * 0xD6E8FEB86659FD93ULL);
    for (Py_ssize_t i = start; i < start + n; i++) {
        h = step(h, padded_at(t, i));
    }
    return finish(h);
}

static inline uint64_t pair_hash(uint64_t first, uint64_t second) {
    return finish((first * 0xC2B2AE3D27D4EB4FULL) ^ second ^ SEED_PAIR);
}

static int read_text(PyObject *s, Text *t) {
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "words must be str");
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) return -1;
#endif
    t->kind = PyUnicode_KIND(s);
    t->data = PyUnicode_DATA(s);
    t->length = PyUnicode_GET_LENGTH(s);
    return 0;
}

/* ---- the weight table ---- */

typedef struct {
    uint64_t key;
    double weight;
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;
    uint64_t mask;
    uint64_t long_word; /* hash of the shared feature of an overlong word */
    Slot *cache;        /* summed weights of words seen before, by word hash: direct-mapped */
} TableObject;

#define CACHE_SLOTS (1 << 15)

static Slot *find(TableObject *table, uint64_t key) {
    uint64_t i = key & table->mask;
    for (;;) {
        Slot *slot = &table->slots[i];
        if (slot->key == key || slot->key == EMPTY) return slot;
        i = (i + 1) & table->mask;
    }
}

static inline double weight_of(TableObject *table, uint64_t key) {
    Slot *slot = find(table, key);
    return slot->key == key ? slot->weight : 0.0;
}

static int put(TableObject *table, uint64_t key, double weight) {
    Slot *slot = find(table, key);
    if (slot->key == key) {
        PyErr_SetString(PyExc_ValueError, "two features share a hash");
        return -1;
    }
    slot->key = key;
    slot->weight = weight;
    return 0;
}

static uint64_t word_hash(PyObject *word, uint64_t seed, int *error) {
    Text t;
    if (read_text(word, &t) < 0) {
        *error = 1;
        return 0;
    }
    return hash_range(seed, t, 0, t.length);
}

/* The key of one entry of Model.weights, or 0 for an entry this table does not hold. */
static uint64_t key_of(PyObject *name, int *error) {
    if (PyTuple_Check(name) && PyTuple_GET_SIZE(name) == 2) {
        uint64_t first = word_hash(PyTuple_GET_ITEM(name, 0), SEED_PAIR, error);
        uint64_t second = word_hash(PyTuple_GET_ITEM(name, 1), SEED_PAIR, error);
        return *error ? 0 : pair_hash(first, second);
    }
    Text t;
    if (read_text(name, &t) < 0) {
        *error = 1;
        return 0;
    }
    if (t.length == 0) return 0;
    Py_UCS4 first = PyUnicode_READ(t.kind, t.data, 0);
    if (first == '#') return 0; /* a marker */
    if (first == '=') return hash_range(SEED_OWN, t, 1, t.length - 1);
    if (t.length >= MIN_GRAM && t.length <= MAX_GRAM) return hash_range(SEED_GRAM, t, 0, t.length);
    return 0;
}

static void table_dealloc(TableObject *self) {
    PyMem_Free(self->slots);
    PyMem_Free(self->cache);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int table_init(TableObject *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"weights", NULL};
    PyObject *weights;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!", names, &PyDict_Type, &weights)) return -1;
    uint64_t size = 1024;
    while (size < (uint64_t)PyDict_GET_SIZE(weights) * 2) size <<= 1;
    PyMem_Free(self->slots);
    PyMem_Free(self->cache);
    self->slots = PyMem_Calloc(size, sizeof(Slot));
    self->cache = PyMem_Calloc(CACHE_SLOTS, sizeof(Slot));
    if (self->slots == NULL || self->cache == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->mask = size - 1;
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(weights, &pos, &name, &value)) {
        int error = 0;
        uint64_t key = key_of(name, &error);
        if (error) return -1;
        if (key == EMPTY) continue;
        double weight = PyFloat_AsDouble(value);
        if (weight == -1.0 && PyErr_Occurred()) return -1;
        if (put(self, key, weight) < 0) return -1;
    }
    PyObject *long_name = PyUnicode_FromString("#long");
    if (long_name == NULL) return -1;
    int error = 0;
    self->long_word = word_hash(long_name, SEED_OWN, &error);
    Py_DECREF(long_name);
    return error ? -1 : 0;
}

/* ---- one text ---- */

/* A set of 64-bit keys, sized to what one call puts in it (at most a quarter full). */
typedef struct {
    uint64_t *keys;
    Py_ssize_t *values;
    uint64_t mask;
} Seen;

static int seen_init(Seen *seen, Py_ssize_t count) {
    uint64_t capacity = 64;
    while (capacity < (uint64_t)count * 4) capacity <<= 1;
    seen->mask = capacity - 1;
    seen->keys = PyMem_Calloc(capacity, sizeof(uint64_t));
    seen->values = PyMem_Malloc(capacity * sizeof(Py_ssize_t));
    return seen->keys != NULL && seen->values != NULL ? 0 : -1;
}

static void seen_free(Seen *seen) {
    PyMem_Free(seen->keys);
    PyMem_Free(seen->values);
}

/* The slot of key: set to value if the key is new (returns 1), left as it is if not (0). */
static inline int seen_add(Seen *seen, uint64_t key, Py_ssize_t value, Py_ssize_t *found) {
    uint64_t i = key & seen->mask;
    while (seen->keys[i] != EMPTY) {
        if (seen->keys[i] == key) {
            *found = seen->values[i];
            return 0;
        }
        i = (i + 1) & seen->mask;
    }
    seen->keys[i] = key;
    seen->values[i] = *found = value;
    return 1;
}

/* The summed weight of a word's own feature and its n-grams (learned._subwords). */
static double word_weight(TableObject *table, Text t) {
    if (t.length > LONG_WORD) return weight_of(table, table->long_word);
    double total = weight_of(table, hash_range(SEED_OWN, t, 0, t.length));
    Py_ssize_t padded = t.length + 2;
    for (Py_ssize_t n = MIN_GRAM; n <= MAX_GRAM; n++) {
        for (Py_ssize_t i = 0; i + n <= padded; i++) {
            total += weight_of(table, hash_padded(t, i, n));
        }
    }
    return total;
}

typedef struct {
    uint64_t own;     /* the word's hash */
    Py_ssize_t first; /* the position where this word first occurs in the text */
    uint64_t pair;    /* its part of a pair's key */
    double weight;    /* at its first position: its summed weight, NAN until weighed */
} Word;

/* One window's value: the weights of its distinct words and distinct pairs, summed, over
   the square root of their number (learned.Model._window). */
static double window_value(TableObject *table, PyObject *list, Word *words, Py_ssize_t start,
                           Py_ssize_t size, Seen *distinct, Seen *pairs) {
    memset(distinct->keys, 0, (distinct->mask + 1) * sizeof(uint64_t));
    memset(pairs->keys, 0, (pairs->mask + 1) * sizeof(uint64_t));
    double total = 0.0;
    Py_ssize_t count = 0, found;
    for (Py_ssize_t i = start; i < start + size; i++) {
        Word *word = &words[words[i].first];
        if (!seen_add(distinct, (uint64_t)words[i].first + 1, i, &found)) continue;
        count++;
        if (isnan(word->weight)) {
            Slot *cached = &table->cache[word->own & (CACHE_SLOTS - 1)];
            if (cached->key != word->own) {
                Text t;
                (void)read_text(PyList_GET_ITEM(list, words[i].first), &t); /* read before */
                cached->key = word->own;
                cached->weight = word_weight(table, t);
            }
            word->weight = cached->weight;
        }
        total += word->weight;
    }
    for (Py_ssize_t i = start; i + 1 < start + size; i++) {
        uint64_t key = pair_hash(words[i].pair, words[i + 1].pair);
        if (!seen_add(pairs, key, i, &found)) continue;
        count++;
        total += weight_of(table, key);
    }
    return total / sqrt((double)count);
}

static PyObject *table_best(TableObject *self, PyObject *args) {
    PyObject *list;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &list, &size)) return NULL;
    if (self->slots == NULL || self->cache == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Table.__init__ was not called");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n == 0 || size < 1) {
        PyErr_SetString(PyExc_ValueError, "no words, or a window of no words");
        return NULL;
    }
    Py_ssize_t span = n < size ? n : size;
    Word *words = PyMem_Malloc(n * sizeof(Word));
    Seen text = {NULL, NULL, 0}, distinct = {NULL, NULL, 0}, pairs = {NULL, NULL, 0};
    PyObject *result = NULL;
    if (words == NULL || seen_init(&text, n) < 0 || seen_init(&distinct, span) < 0
        || seen_init(&pairs, span) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Text t;
        if (read_text(PyList_GET_ITEM(list, i), &t) < 0) goto done;
        uint64_t own = hash_range(SEED_OWN, t, 0, t.length);
        words[i].own = own;
        seen_add(&text, own, i, &words[i].first);
        words[i].pair = hash_range(SEED_PAIR, t, 0, t.length);
        words[i].weight = NAN;
    }
    double best;
    if (n <= size) {
        best = window_value(self, list, words, 0, n, &distinct, &pairs);
    } else {
        Py_ssize_t last = n - size, stride = size / 2 > 0 ? size / 2 : 1;
        best = -INFINITY;
        for (Py_ssize_t start = 0; start < last + stride; start += stride) {
            Py_ssize_t at = start < last ? start : last;
            double value = window_value(self, list, words, at, size, &distinct, &pairs);
            if (value > best) best = value;
        }
    }
    result = PyFloat_FromDouble(best);
done:
    seen_free(&text);
    seen_free(&distinct);
    seen_free(&pairs);
    PyMem_Free(words);
    return result;
}

static PyMethodDef table_methods[] = {
    {"best", (PyCFunction)table_best, METH_VARARGS,
     "best(words, size): the highest window value of the words, in windows of size words "
     "a new one every half window (learned.windows), each the summed weights of its distinct "
     "words' features and of its distinct pairs, over the square root of their number."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agent_executor.guards.injection._learned_native.Table",
    .tp_basicsize = sizeof(TableObject),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Table(weights): a learned model's word, n-gram and pair weights, hashed.",
    .tp_methods = table_methods,
    .tp_init = (initproc)table_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "agent_executor.guards.injection._learned_native",
    .m_doc = "The learned layer's window sums, in C (see learned.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__learned_native(void) {
    if (PyType_Ready(&TableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&TableType);
    if (PyModule_AddObject(m, "Table", (PyObject *)&TableType) < 0) {
        Py_DECREF(&TableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
