/*
 * The gates in C: which of a few hundred strings occur in a text (Strings), and which of a
 * gate's patterns the strings found let run (Gate, at the end of this file).
 *
 * Why: the rules' and the learned layer's gates search every text once per view for the
 * strings their patterns need (word_gate.py, literal_gate.py). pyahocorasick reports every
 * occurrence as a tuple, looks each character up in a list of a node's children, and keeps
 * its nodes in separate allocations, so a text read after the rest of a request has emptied
 * the caches pays a miss for most nodes it passes (docs/benchmarks.md). Here the automaton is
 * one block, nodes numbered breadth first (the shallow nodes, which most characters visit,
 * share a few cache lines), and each key is reported once per text. An ASCII character is
 * one load from a table of every node's next node (a DFA: no fail links to follow, no list of
 * children to search), over the ASCII characters the needles hold, each one column, and one
 * more for all the others (which lead to the root); any other character follows the trie's
 * edges and fail links.
 *
 * Strings(pairs): pairs of (needle, key), needles non-empty strings; a key is any hashable
 * object, reported when its needle occurs (several needles may share one; a needle given
 * twice keeps its first key).
 *   found(text) -> set of the keys whose needles occur in text
 *   iter(text)  -> list of (end, key) for every occurrence, end the index of its last
 *                  character, in pyahocorasick's order (by end; at one end, longest first)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define ROOT 0
#define NONE (-1)
#define SCAN_BELOW 8 /* a node with fewer children is scanned, not bisected */

typedef struct {
    PyObject_HEAD
    int32_t nodes;
    int32_t *first;  /* nodes + 1: the edges of node n are first[n] .. first[n + 1] - 1 */
    Py_UCS4 *chars;  /* each edge's character, sorted within a node */
    int32_t *target; /* each edge's node */
    int32_t *fail;   /* the longest proper suffix of a node's string that is a node */
    int32_t *key;    /* the key of the needle that ends at a node, or NONE */
    int32_t *output; /* the node itself if a needle ends there, else the nearest on its
                        fail chain where one does, or NONE */
    int32_t *next_output; /* for a node with a key: the next node on its fail chain with one */
    int32_t root[128];    /* the root's children for ASCII characters, or NONE */
    uint8_t column[128];  /* an ASCII character's column in the table below, 0 if no needle
                             holds it */
    int32_t columns;
    uint16_t *table;      /* node * columns + column -> the next node; NULL above 65,535 nodes */
    char *block;          /* every array above, in one allocation */
    PyObject *keys;       /* tuple: key index -> key */
} StringsObject;

/* The trie while it is built: children as linked lists, numbered in insertion order. */
typedef struct {
    Py_UCS4 c;
    int32_t child, sibling, key;
} Draft;

typedef struct {
    Draft *nodes;
    int32_t size, capacity;
} Trie;

static int32_t trie_add(Trie *t, Py_UCS4 c) {
    if (t->size == t->capacity) {
        int32_t capacity = t->capacity ? t->capacity * 2 : 256;
        Draft *grown = PyMem_Realloc(t->nodes, (size_t)capacity * sizeof(Draft));
        if (grown == NULL) return NONE;
        t->nodes = grown;
        t->capacity = capacity;
    }
    t->nodes[t->size] = (Draft){c, NONE, NONE, NONE};
    return t->size++;
}

static int32_t trie_child(const Trie *t, int32_t node, Py_UCS4 c) {
    for (int32_t k = t->nodes[node].child; k != NONE; k = t->nodes[k].sibling)
        if (t->nodes[k].c == c) return k;
    return NONE;
}

static int trie_insert(Trie *t, PyObject *needle, int32_t key) {
    int kind = PyUnicode_KIND(needle);
    const void *data = PyUnicode_DATA(needle);
    int32_t node = ROOT;
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(needle); i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int32_t next = trie_child(t, node, c);
        if (next == NONE) {
            next = trie_add(t, c);
            if (next == NONE) return -1;
            t->nodes[next].sibling = t->nodes[node].child;
            t->nodes[node].child = next;
        }
        node = next;
    }
    if (t->nodes[node].key == NONE) t->nodes[node].key = key; /* the first pair wins */
    return 0;
}

static inline int32_t child_of(const StringsObject *s, int32_t node, Py_UCS4 c) {
    if (node == ROOT && c < 128) return s->root[c];
    int32_t lo = s->first[node], hi = s->first[node + 1];
    if (hi - lo < SCAN_BELOW) {
        for (; lo < hi; lo++)
            if (s->chars[lo] == c) return s->target[lo];
        return NONE;
    }
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (s->chars[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->first[node + 1] && s->chars[lo] == c ? s->target[lo] : NONE;
}

static int compare_edges(const void *a, const void *b) {
    Py_UCS4 x = ((const Draft *)a)->c, y = ((const Draft *)b)->c;
    return (x > y) - (x < y);
}

/* The trie's nodes in breadth-first order, as edges sorted by character; then the fail
 * links, which need every node of a smaller depth first. */
static int strings_compile(StringsObject *s, Trie *t) {
    int32_t n = t->size, edges = n - 1;
    memset(s->column, 0, sizeof(s->column));
    s->columns = 1;
    for (int32_t k = 1; k < n; k++) {
        Py_UCS4 c = t->nodes[k].c;
        if (c < 128 && s->column[c] == 0) s->column[c] = (uint8_t)s->columns++;
    }
    size_t cells = n <= UINT16_MAX ? (size_t)n * (size_t)s->columns : 0;
    size_t ints = (size_t)(n + 1) + (size_t)edges + 4 * (size_t)n;
    s->block = PyMem_Calloc(ints * sizeof(int32_t) + (size_t)edges * sizeof(Py_UCS4) +
                                cells * sizeof(uint16_t) + 1,
                            1);
    int32_t *order = PyMem_Malloc((size_t)n * sizeof(int32_t)); /* new number -> draft */
    Draft *kids = PyMem_Malloc((size_t)(edges > 0 ? edges : 1) * sizeof(Draft));
    if (s->block == NULL || order == NULL || kids == NULL) {
        PyMem_Free(order);
        PyMem_Free(kids);
        PyErr_NoMemory();
        return -1;
    }
    int32_t *p = (int32_t *)s->block;
    s->first = p, p += n + 1;
    s->target = p, p += edges;
    s->fail = p, p += n;
    s->key = p, p += n;
    s->output = p, p += n;
    s->next_output = p, p += n;
    s->chars = (Py_UCS4 *)p;
    s->table = cells ? (uint16_t *)(s->chars + edges) : NULL;
    s->nodes = n;

    int32_t head = 0, tail = 0, edge = 0;
    order[tail++] = ROOT;
    while (head < tail) {
        int32_t at = head, draft = order[head++], count = 0;
        for (int32_t k = t->nodes[draft].child; k != NONE; k = t->nodes[k].sibling) {
            kids[count] = t->nodes[k];
            kids[count++].child = k; /* carry the draft's number through the sort */
        }
        qsort(kids, (size_t)count, sizeof(Draft), compare_edges);
        s->first[at] = edge;
        s->key[at] = t->nodes[draft].key;
        for (int32_t i = 0; i < count; i++) {
            s->chars[edge] = kids[i].c;
            s->target[edge++] = tail;
            order[tail++] = kids[i].child;
        }
    }
    s->first[n] = edge;
    for (int c = 0; c < 128; c++) s->root[c] = NONE;
    for (int32_t e = s->first[ROOT]; e < s->first[ROOT + 1]; e++)
        if (s->chars[e] < 128) s->root[s->chars[e]] = s->target[e];

    s->fail[ROOT] = ROOT;
    s->output[ROOT] = NONE;
    s->next_output[ROOT] = NONE;
    for (int32_t node = 0; node < n; node++) { /* breadth first: parents before children */
        for (int32_t e = s->first[node]; e < s->first[node + 1]; e++) {
            int32_t kid = s->target[e], f = NONE;
            if (node != ROOT) {
                for (int32_t back = s->fail[node];; back = s->fail[back]) {
                    f = child_of(s, back, s->chars[e]);
                    if (f != NONE || back == ROOT) break;
                }
            }
            s->fail[kid] = f == NONE ? ROOT : f;
            int32_t inherited = s->output[s->fail[kid]];
            s->next_output[kid] = s->key[kid] == NONE ? NONE : inherited;
            s->output[kid] = s->key[kid] == NONE ? inherited : kid;
        }
        if (s->table != NULL) { /* a child, else where the fail link's row goes */
            uint16_t *row = s->table + (size_t)node * (size_t)s->columns;
            if (node != ROOT)
                memcpy(row, s->table + (size_t)s->fail[node] * (size_t)s->columns,
                       (size_t)s->columns * sizeof(uint16_t));
            for (int32_t e = s->first[node]; e < s->first[node + 1]; e++)
                if (s->chars[e] < 128) row[s->column[s->chars[e]]] = (uint16_t)s->target[e];
        }
    }
    PyMem_Free(order);
    PyMem_Free(kids);
    return 0;
}

static int strings_init(StringsObject *self, PyObject *args, PyObject *kwds) {
    PyObject *pairs, *seq = NULL, *index = NULL, *keys = NULL;
    Trie trie = {NULL, 0, 0};
    int status = -1;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) > 0) {
        PyErr_SetString(PyExc_TypeError, "Strings() takes no keyword arguments");
        return -1;
    }
    if (self->block != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Strings() is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O:Strings", &pairs)) return -1;
    seq = PySequence_Fast(pairs, "Strings() takes a sequence of (needle, key) pairs");
    index = PyDict_New();
    keys = PyList_New(0);
    if (seq == NULL || index == NULL || keys == NULL || trie_add(&trie, 0) == NONE) goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i), *needle, *key;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "Strings() takes (needle, key) pairs");
            goto done;
        }
        needle = PyTuple_GET_ITEM(pair, 0);
        key = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_Check(needle) || PyUnicode_GET_LENGTH(needle) == 0) {
            PyErr_SetString(PyExc_ValueError, "a needle is a non-empty string");
            goto done;
        }
        PyObject *number = PyDict_GetItemWithError(index, key);
        if (number == NULL) {
            if (PyErr_Occurred()) goto done;
            number = PyLong_FromSsize_t(PyList_GET_SIZE(keys));
            if (number == NULL) goto done;
            int failed = PyDict_SetItem(index, key, number) < 0 || PyList_Append(keys, key) < 0;
            Py_DECREF(number);
            if (failed) goto done;
            number = PyDict_GetItem(index, key);
        }
        if (trie_insert(&trie, needle, (int32_t)PyLong_AsLong(number)) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (strings_compile(self, &trie) < 0) goto done;
    self->keys = PyList_AsTuple(keys);
    status = self->keys == NULL ? -1 : 0;
done:
    PyMem_Free(trie.nodes);
    Py_XDECREF(seq);
    Py_XDECREF(index);
    Py_XDECREF(keys);
    return status;
}

static void strings_dealloc(StringsObject *self) {
    PyMem_Free(self->block);
    Py_XDECREF(self->keys);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* One step of the automaton: from node, having read c. */
static inline int32_t step(const StringsObject *s, int32_t node, Py_UCS4 c) {
    for (;;) {
        int32_t next = child_of(s, node, c);
        if (next != NONE) return next;
        if (node == ROOT) return ROOT;
        node = s->fail[node];
    }
}

/* Walks text; at each index i, runs REPORT for each node hit of the output chain (each needle
 * that ends at i). */
#define WALK(TYPE, REPORT)                                                     \
    do {                                                                       \
        const TYPE *chars = (const TYPE *)data;                                \
        const uint16_t *table = s->table;                                      \
        const uint8_t *column = s->column;                                     \
        size_t columns = (size_t)s->columns;                                   \
        int32_t node = ROOT;                                                   \
        for (Py_ssize_t i = 0; i < length; i++) {                              \
            Py_UCS4 c = chars[i];                                              \
            if (c < 128 && table != NULL)                                      \
                node = table[(size_t)node * columns + column[c]];              \
            else                                                               \
                node = step(s, node, c);                                       \
            for (int32_t hit = s->output[node]; hit != NONE;                   \
                 hit = s->next_output[hit]) {                                  \
                REPORT;                                                        \
            }                                                                  \
        }                                                                      \
    } while (0)

#define DISPATCH(REPORT)                                                 \
    switch (kind) {                                                      \
        case PyUnicode_1BYTE_KIND: WALK(Py_UCS1, REPORT); break;         \
        case PyUnicode_2BYTE_KIND: WALK(Py_UCS2, REPORT); break;         \
        default: WALK(Py_UCS4, REPORT); break;                           \
    }

static int ready(const StringsObject *s) {
    if (s->keys != NULL) return 1;
    PyErr_SetString(PyExc_ValueError, "Strings() was not initialised");
    return 0;
}

static PyObject *strings_found(StringsObject *s, PyObject *text) {
    if (!ready(s)) return NULL;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "found() takes a string");
        return NULL;
    }
    Py_ssize_t nkeys = PyTuple_GET_SIZE(s->keys), length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    uint8_t small[512]; /* a bit per key: 4,096 keys without an allocation */
    size_t bytes = (size_t)nkeys / 8 + 1;
    uint8_t *seen = bytes <= sizeof(small) ? small : PyMem_Malloc(bytes);
    PyObject *out = PySet_New(NULL);
    if (seen == NULL || out == NULL) {
        if (seen != small) PyMem_Free(seen);
        Py_XDECREF(out);
        return seen == NULL ? PyErr_NoMemory() : NULL;
    }
    memset(seen, 0, bytes);
    int failed = 0;
    DISPATCH({
        int32_t k = s->key[hit];
        uint8_t bit = (uint8_t)(1u << (k & 7));
        if (!(seen[k >> 3] & bit)) {
            seen[k >> 3] |= bit;
            failed |= PySet_Add(out, PyTuple_GET_ITEM(s->keys, k)) < 0;
        }
    });
    if (seen != small) PyMem_Free(seen);
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *strings_iter(StringsObject *s, PyObject *text) {
    if (!ready(s)) return NULL;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "iter() takes a string");
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    int failed = 0;
    DISPATCH({
        if (!failed) {
            PyObject *item = Py_BuildValue("(nO)", i, PyTuple_GET_ITEM(s->keys, s->key[hit]));
            failed = item == NULL || PyList_Append(out, item) < 0;
            Py_XDECREF(item);
        }
    });
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyMethodDef strings_methods[] = {
    {"found", (PyCFunction)strings_found, METH_O,
     "found(text): the set of the keys whose needles occur in text."},
    {"iter", (PyCFunction)strings_iter, METH_O,
     "iter(text): (end, key) for every occurrence of a needle, end the index of its last "
     "character, by end and at one end longest first (as pyahocorasick's Automaton.iter)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StringsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agent_executor.guards.injection._scan_native.Strings",
    .tp_basicsize = sizeof(StringsObject),
    .tp_dealloc = (destructor)strings_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Strings(pairs): an Aho-Corasick automaton of (needle, key) pairs in one block.",
    .tp_methods = strings_methods,
    .tp_init = (initproc)strings_init,
    .tp_new = PyType_GenericNew,
};

/*
 * Gate(keys, starts, needs, keyed, unkeyed): which of a gate's patterns can match, given the
 * keys a text holds (word_gate.WordGate.runnable, whose Python the tests compare it with).
 *   keys:    the key strings, numbered by position
 *   starts:  per pattern, the key numbers one of which must be present, or None
 *   needs:   per pattern, None or its alternatives: each a sequence of clauses, each a
 *            sequence of key numbers one of which must be present
 *   keyed:   per key number, the patterns looked at when it is present
 *   unkeyed: the patterns always looked at
 *   runnable(present) -> list, in order, of the patterns looked at whose start clause holds
 *                        and, unless their needs are None, every clause of one alternative
 * Python walked sets of strings for this: a frozenset union and an isdisjoint per clause.
 */

typedef struct {
    int32_t *items;
    Py_ssize_t size, capacity;
} Ints;

static int ints_add(Ints *v, int32_t x) {
    if (v->size == v->capacity) {
        Py_ssize_t capacity = v->capacity ? v->capacity * 2 : 64;
        int32_t *grown = PyMem_Realloc(v->items, (size_t)capacity * sizeof(int32_t));
        if (grown == NULL) return -1;
        v->items = grown;
        v->capacity = capacity;
    }
    v->items[v->size++] = x;
    return 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *numbers; /* dict: key -> its number */
    Py_ssize_t nkeys, npatterns;
    int32_t *start;    /* per pattern: offset of its start clause in pool, NONE if None */
    int32_t *needs;    /* per pattern: offset of its alternatives in pool, NONE if None */
    int32_t *keyed;    /* per key: offset of its patterns in pool */
    int32_t unkeyed;   /* offset of the patterns always looked at */
    int32_t *pool;     /* lists, each its length and then its items */
} GateObject;

/* Appends seq (numbers below bound) to pool as a list; its offset, or NONE on error. */
static int32_t add_numbers(Ints *pool, PyObject *seq, Py_ssize_t bound) {
    PyObject *fast = PySequence_Fast(seq, "Gate() takes sequences of numbers");
    if (fast == NULL) return NONE;
    int32_t at = (int32_t)pool->size;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int failed = ints_add(pool, (int32_t)n) < 0;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        Py_ssize_t x = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fast, i));
        if (x < 0 || x >= bound) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a number out of range");
            failed = 1;
        } else {
            failed = ints_add(pool, (int32_t)x) < 0;
        }
    }
    Py_DECREF(fast);
    if (failed && !PyErr_Occurred()) PyErr_NoMemory();
    return failed ? NONE : at;
}

/* Appends a list of lists of lists (needs' alternatives) to pool: each level its length,
 * then its items' offsets. */
static int32_t add_nested(Ints *pool, PyObject *seq, int depth, Py_ssize_t bound) {
    if (depth == 0) return add_numbers(pool, seq, bound);
    PyObject *fast = PySequence_Fast(seq, "Gate() takes nested sequences of numbers");
    if (fast == NULL) return NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int32_t *inner = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int32_t)), at = NONE;
    Py_ssize_t i = 0;
    for (; inner != NULL && i < n; i++) {
        inner[i] = add_nested(pool, PySequence_Fast_GET_ITEM(fast, i), depth - 1, bound);
        if (inner[i] == NONE) break;
    }
    if (inner != NULL && i == n) {
        at = (int32_t)pool->size;
        int failed = ints_add(pool, (int32_t)n) < 0;
        for (i = 0; i < n && !failed; i++) failed = ints_add(pool, inner[i]) < 0;
        if (failed) at = NONE, PyErr_NoMemory();
    } else if (inner == NULL) {
        PyErr_NoMemory();
    }
    PyMem_Free(inner);
    Py_DECREF(fast);
    return at;
}

static int gate_init(GateObject *self, PyObject *args, PyObject *kwds) {
    PyObject *keys, *starts, *needs, *keyed, *unkeyed, *seq[3] = {NULL, NULL, NULL};
    Ints pool = {NULL, 0, 0};
    if (kwds != NULL && PyDict_GET_SIZE(kwds) > 0) {
        PyErr_SetString(PyExc_TypeError, "Gate() takes no keyword arguments");
        return -1;
    }
    if (self->numbers != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Gate() is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOOOO:Gate", &keys, &starts, &needs, &keyed, &unkeyed))
        return -1;
    int status = -1;
    seq[0] = PySequence_Fast(keys, "Gate() takes a sequence of keys");
    seq[1] = PySequence_Fast(starts, "Gate() takes a sequence of start clauses");
    seq[2] = PySequence_Fast(needs, "Gate() takes a sequence of needs");
    self->numbers = PyDict_New();
    if (seq[0] == NULL || seq[1] == NULL || seq[2] == NULL || self->numbers == NULL) goto done;
    Py_ssize_t nkeys = PySequence_Fast_GET_SIZE(seq[0]), n = PySequence_Fast_GET_SIZE(seq[1]);
    if (PySequence_Fast_GET_SIZE(seq[2]) != n || PyObject_Length(keyed) != nkeys) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "starts and needs per pattern, keyed per key");
        goto done;
    }
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        PyObject *number = PyLong_FromSsize_t(k);
        int failed = number == NULL ||
                     PyDict_SetItem(self->numbers, PySequence_Fast_GET_ITEM(seq[0], k), number);
        Py_XDECREF(number);
        if (failed) goto done;
    }
    self->start = PyMem_Malloc((size_t)(2 * n + nkeys + 1) * sizeof(int32_t));
    if (self->start == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    self->needs = self->start + n;
    self->keyed = self->needs + n;
    for (Py_ssize_t p = 0; p < n; p++) {
        PyObject *start = PySequence_Fast_GET_ITEM(seq[1], p);
        PyObject *need = PySequence_Fast_GET_ITEM(seq[2], p);
        self->start[p] = start == Py_None ? NONE : add_numbers(&pool, start, nkeys);
        if (start != Py_None && self->start[p] == NONE) goto done;
        self->needs[p] = need == Py_None ? NONE : add_nested(&pool, need, 2, nkeys);
        if (need != Py_None && self->needs[p] == NONE) goto done;
    }
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        PyObject *item = PySequence_GetItem(keyed, k);
        self->keyed[k] = item == NULL ? NONE : add_numbers(&pool, item, n);
        Py_XDECREF(item);
        if (self->keyed[k] == NONE) goto done;
    }
    self->unkeyed = add_numbers(&pool, unkeyed, n);
    if (self->unkeyed == NONE) goto done;
    self->pool = pool.items;
    pool.items = NULL;
    self->nkeys = nkeys;
    self->npatterns = n;
    status = 0;
done:
    PyMem_Free(pool.items);
    for (int i = 0; i < 3; i++) Py_XDECREF(seq[i]);
    return status;
}

static void gate_dealloc(GateObject *self) {
    PyMem_Free(self->start);
    PyMem_Free(self->pool);
    Py_XDECREF(self->numbers);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define HAS(bits, k) ((bits)[(k) >> 3] & (1u << ((k) & 7)))
#define SET(bits, k) ((bits)[(k) >> 3] |= (uint8_t)(1u << ((k) & 7)))

/* Whether one key of the list at pool[at] is in bits. */
static inline int any_of(const int32_t *pool, int32_t at, const uint8_t *bits) {
    for (int32_t i = 1; i <= pool[at]; i++)
        if (HAS(bits, pool[at + i])) return 1;
    return 0;
}

static int gate_holds(const GateObject *g, Py_ssize_t p, const uint8_t *bits) {
    const int32_t *pool = g->pool;
    if (g->start[p] != NONE && !any_of(pool, g->start[p], bits)) return 0;
    int32_t needs = g->needs[p];
    if (needs == NONE) return 1;
    for (int32_t a = 1; a <= pool[needs]; a++) {
        int32_t alt = pool[needs + a], c = 1;
        while (c <= pool[alt] && any_of(pool, pool[alt + c], bits)) c++;
        if (c > pool[alt]) return 1;
    }
    return 0;
}

static PyObject *gate_runnable(GateObject *g, PyObject *present) {
    if (g->pool == NULL) {
        PyErr_SetString(PyExc_ValueError, "Gate() was not initialised");
        return NULL;
    }
    uint8_t small[1024]; /* keys' bits, then patterns' bits: 4,096 of each on the stack */
    size_t key_bytes = (size_t)g->nkeys / 8 + 1, bytes = key_bytes + (size_t)g->npatterns / 8 + 1;
    uint8_t *bits = bytes <= sizeof(small) ? small : PyMem_Malloc(bytes), *looked;
    PyObject *iterator = PyObject_GetIter(present), *key, *out = NULL;
    if (bits == NULL || iterator == NULL) goto done;
    memset(bits, 0, bytes);
    looked = bits + key_bytes;
    const int32_t *pool = g->pool;
    for (int32_t i = 1; i <= pool[g->unkeyed]; i++) SET(looked, pool[g->unkeyed + i]);
    while ((key = PyIter_Next(iterator)) != NULL) {
        PyObject *number = PyDict_GetItemWithError(g->numbers, key);
        Py_DECREF(key);
        if (number == NULL) {
            if (PyErr_Occurred()) goto done;
            continue;
        }
        Py_ssize_t k = PyLong_AsSsize_t(number);
        SET(bits, k);
        for (int32_t i = 1; i <= pool[g->keyed[k]]; i++) SET(looked, pool[g->keyed[k] + i]);
    }
    if (PyErr_Occurred() || (out = PyList_New(0)) == NULL) goto done;
    for (Py_ssize_t p = 0; p < g->npatterns; p++) {
        if (!looked[p >> 3]) {
            p |= 7; /* none of these eight */
            continue;
        }
        if (!HAS(looked, p) || !gate_holds(g, p, bits)) continue;
        PyObject *number = PyLong_FromSsize_t(p);
        int failed = number == NULL || PyList_Append(out, number) < 0;
        Py_XDECREF(number);
        if (failed) {
            Py_CLEAR(out);
            break;
        }
    }
done:
    if (bits == NULL) PyErr_NoMemory();
    if (bits != small) PyMem_Free(bits);
    Py_XDECREF(iterator);
    return out;
}

static PyMethodDef gate_methods[] = {
    {"runnable", (PyCFunction)gate_runnable, METH_O,
     "runnable(present): the patterns, in order, that the keys in present let run."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agent_executor.guards.injection._scan_native.Gate",
    .tp_basicsize = sizeof(GateObject),
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Gate(keys, starts, needs, keyed, unkeyed): which patterns present keys let run.",
    .tp_methods = gate_methods,
    .tp_init = (initproc)gate_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "agent_executor.guards.injection._scan_native",
    .m_doc = "The gates' string search and pattern choice, in C (see _parse_tree.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__scan_native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddType(m, &StringsType) < 0 || PyModule_AddType(m, &GateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
