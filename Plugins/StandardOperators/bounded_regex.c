/* See bounded_regex.h. Matching works on bytes: a UTF-8 multi-byte character is a sequence of
 * literal bytes, so literals and classes of ASCII behave as expected and `.` matches one byte. */
#include "bounded_regex.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_CHAR, OP_ANY, OP_CLASS, OP_SPLIT, OP_JMP, OP_BOL, OP_EOL, OP_MATCH };

typedef struct { uint8_t bits[32]; } byte_set_t;

typedef struct {
    int op;
    int x, y;       /* jump targets (SPLIT: x preferred) */
    uint8_t c;      /* OP_CHAR */
    int set;        /* OP_CLASS: index into sets */
} instruction_t;

struct bounded_regex {
    instruction_t *code;
    int length;
    byte_set_t *sets;
    int set_count;
};

/* ---- parsing: pattern -> syntax tree ---- */

typedef enum { N_CHAR, N_ANY, N_CLASS, N_BOL, N_EOL, N_CAT, N_ALT, N_REPEAT, N_EMPTY } node_kind_t;

typedef struct node {
    node_kind_t kind;
    uint8_t c;
    byte_set_t set;
    struct node *left, *right; /* CAT, ALT; REPEAT uses left */
    int min, max;              /* REPEAT; max -1 = unbounded */
} node_t;

typedef struct {
    const char *p, *end;
    char *error;
    size_t error_size;
    int depth;
} parser_t;

static node_t *node_new(node_kind_t kind) {
    node_t *n = calloc(1, sizeof *n);
    if (n) n->kind = kind;
    return n;
}

static void node_free(node_t *n) {
    if (!n) return;
    node_free(n->left);
    node_free(n->right);
    free(n);
}

static void set_add(byte_set_t *s, unsigned c) { s->bits[c >> 3] |= (uint8_t)(1u << (c & 7)); }
static bool set_has(const byte_set_t *s, unsigned c) { return (s->bits[c >> 3] >> (c & 7)) & 1u; }
static void set_range(byte_set_t *s, unsigned a, unsigned b) { for (unsigned c = a; c <= b; c++) set_add(s, c); }
static void set_invert(byte_set_t *s) { for (int i = 0; i < 32; i++) s->bits[i] = (uint8_t)~s->bits[i]; }

static bool fail(parser_t *ps, const char *message) {
    if (ps->error && ps->error[0] == '\0') snprintf(ps->error, ps->error_size, "%s", message);
    return false;
}

/* \d \w \s and their negations into `s`; false if `e` is not one of them. */
static bool class_escape(char e, byte_set_t *s) {
    byte_set_t t;
    memset(&t, 0, sizeof t);
    switch (e) {
    case 'd': case 'D': set_range(&t, '0', '9'); break;
    case 'w': case 'W': set_range(&t, 'a', 'z'); set_range(&t, 'A', 'Z'); set_range(&t, '0', '9'); set_add(&t, '_'); break;
    case 's': case 'S': set_add(&t, ' '); set_add(&t, '\t'); set_add(&t, '\n'); set_add(&t, '\r'); set_add(&t, '\f'); set_add(&t, '\v'); break;
    default: return false;
    }
    if (e == 'D' || e == 'W' || e == 'S') set_invert(&t);
    for (int i = 0; i < 32; i++) s->bits[i] |= t.bits[i];
    return true;
}

static uint8_t literal_escape(char e) {
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    default: return (uint8_t)e;
    }
}

static node_t *parse_alt(parser_t *ps);

static node_t *parse_class(parser_t *ps) {
    node_t *n = node_new(N_CLASS);
    if (!n) return NULL;
    bool negate = false;
    if (ps->p < ps->end && *ps->p == '^') { negate = true; ps->p++; }
    bool first = true;
    while (ps->p < ps->end && (*ps->p != ']' || first)) {
        first = false;
        unsigned lo = (uint8_t)*ps->p++;
        if (lo == '\\' && ps->p < ps->end) {
            char e = *ps->p++;
            if (class_escape(e, &n->set)) continue;
            lo = literal_escape(e);
        }
        if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
            ps->p++;
            unsigned hi = (uint8_t)*ps->p++;
            if (hi == '\\' && ps->p < ps->end) hi = literal_escape(*ps->p++);
            if (hi < lo) { node_free(n); fail(ps, "a class range goes backwards"); return NULL; }
            set_range(&n->set, lo, hi);
        } else {
            set_add(&n->set, lo);
        }
    }
    if (ps->p >= ps->end) { node_free(n); fail(ps, "missing ] to close a class"); return NULL; }
    ps->p++; /* ] */
    if (negate) set_invert(&n->set);
    return n;
}

static node_t *parse_atom(parser_t *ps) {
    char c = *ps->p++;
    node_t *n;
    switch (c) {
    case '(':
        if (++ps->depth > 100) { fail(ps, "groups nested too deeply"); return NULL; }
        n = parse_alt(ps);
        ps->depth--;
        if (!n) return NULL;
        if (ps->p >= ps->end || *ps->p != ')') { node_free(n); fail(ps, "missing ) to close a group"); return NULL; }
        ps->p++;
        return n;
    case '[': return parse_class(ps);
    case '.': return node_new(N_ANY);
    case '^': return node_new(N_BOL);
    case '$': return node_new(N_EOL);
    case '\\':
        if (ps->p >= ps->end) { fail(ps, "a trailing backslash"); return NULL; }
        c = *ps->p++;
        n = node_new(N_CLASS);
        if (n && class_escape(c, &n->set)) return n;
        if (n) { n->kind = N_CHAR; n->c = literal_escape(c); }
        return n;
    case '*': case '+': case '?': case '{':
        fail(ps, "a quantifier with nothing before it");
        return NULL;
    default:
        n = node_new(N_CHAR);
        if (n) n->c = (uint8_t)c;
        return n;
    }
}

static bool parse_count(parser_t *ps, int *out) {
    int v = 0;
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        v = v * 10 + (*ps->p++ - '0');
        if (v > 1000) return fail(ps, "a repeat count over 1000");
    }
    *out = v;
    return ps->p > start;
}

static node_t *parse_repeat(parser_t *ps) {
    node_t *atom = parse_atom(ps);
    while (atom && ps->p < ps->end && strchr("*+?{", *ps->p)) {
        int min = 0, max = -1;
        char q = *ps->p++;
        if (q == '+') min = 1;
        else if (q == '?') max = 1;
        else if (q == '{') {
            if (!parse_count(ps, &min)) { node_free(atom); fail(ps, "{ without a count"); return NULL; }
            max = min;
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                max = -1;
                if (ps->p < ps->end && *ps->p != '}' && !parse_count(ps, &max)) { node_free(atom); return NULL; }
            }
            if (ps->p >= ps->end || *ps->p != '}') { node_free(atom); fail(ps, "missing } after a count"); return NULL; }
            ps->p++;
            if (max != -1 && max < min) { node_free(atom); fail(ps, "a repeat {m,n} with n < m"); return NULL; }
        }
        node_t *r = node_new(N_REPEAT);
        if (!r) { node_free(atom); return NULL; }
        r->left = atom;
        r->min = min;
        r->max = max;
        atom = r;
    }
    return atom;
}

static node_t *parse_cat(parser_t *ps) {
    node_t *result = NULL;
    while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        node_t *next = parse_repeat(ps);
        if (!next) { node_free(result); return NULL; }
        if (!result) { result = next; continue; }
        node_t *cat = node_new(N_CAT);
        if (!cat) { node_free(result); node_free(next); return NULL; }
        cat->left = result;
        cat->right = next;
        result = cat;
    }
    return result ? result : node_new(N_EMPTY);
}

static node_t *parse_alt(parser_t *ps) {
    node_t *left = parse_cat(ps);
    while (left && ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        node_t *right = parse_cat(ps);
        if (!right) { node_free(left); return NULL; }
        node_t *alt = node_new(N_ALT);
        if (!alt) { node_free(left); node_free(right); return NULL; }
        alt->left = left;
        alt->right = right;
        left = alt;
    }
    return left;
}

/* ---- code generation: syntax tree -> Pike VM program ---- */

typedef struct {
    bounded_regex_t *re;
    int capacity;
    int set_capacity;
    size_t max_program;
    bool overflow;
} emitter_t;

static int emit(emitter_t *em, instruction_t in) {
    if ((size_t)em->re->length >= em->max_program) { em->overflow = true; return -1; }
    if (em->re->length == em->capacity) {
        int grown = em->capacity ? em->capacity * 2 : 64;
        instruction_t *code = realloc(em->re->code, (size_t)grown * sizeof *code);
        if (!code) { em->overflow = true; return -1; }
        em->re->code = code;
        em->capacity = grown;
    }
    em->re->code[em->re->length] = in;
    return em->re->length++;
}

static int add_set(emitter_t *em, const byte_set_t *set) {
    if (em->re->set_count == em->set_capacity) {
        int grown = em->set_capacity ? em->set_capacity * 2 : 8;
        byte_set_t *sets = realloc(em->re->sets, (size_t)grown * sizeof *sets);
        if (!sets) { em->overflow = true; return 0; }
        em->re->sets = sets;
        em->set_capacity = grown;
    }
    em->re->sets[em->re->set_count] = *set;
    return em->re->set_count++;
}

static void gen(emitter_t *em, const node_t *n) {
    if (em->overflow) return;
    instruction_t in;
    memset(&in, 0, sizeof in);
    switch (n->kind) {
    case N_EMPTY: return;
    case N_CHAR: in.op = OP_CHAR; in.c = n->c; emit(em, in); return;
    case N_ANY: in.op = OP_ANY; emit(em, in); return;
    case N_CLASS: in.op = OP_CLASS; in.set = add_set(em, &n->set); emit(em, in); return;
    case N_BOL: in.op = OP_BOL; emit(em, in); return;
    case N_EOL: in.op = OP_EOL; emit(em, in); return;
    case N_CAT: gen(em, n->left); gen(em, n->right); return;
    case N_ALT: {
        in.op = OP_SPLIT;
        int split = emit(em, in);
        gen(em, n->left);
        in.op = OP_JMP;
        int jump = emit(em, in);
        if (em->overflow) return;
        em->re->code[split].x = split + 1;
        em->re->code[split].y = em->re->length;
        gen(em, n->right);
        if (em->overflow) return;
        em->re->code[jump].x = em->re->length;
        return;
    }
    case N_REPEAT: {
        for (int i = 0; i < n->min; i++) gen(em, n->left);
        if (n->max == -1) {
            /* L: split body, out; body; jmp L */
            in.op = OP_SPLIT;
            int split = emit(em, in);
            gen(em, n->left);
            in.op = OP_JMP;
            in.x = split;
            emit(em, in);
            if (em->overflow) return;
            em->re->code[split].x = split + 1;
            em->re->code[split].y = em->re->length;
        } else {
            for (int i = n->min; i < n->max; i++) {
                in.op = OP_SPLIT;
                int split = emit(em, in);
                gen(em, n->left);
                if (em->overflow) return;
                em->re->code[split].x = split + 1;
                em->re->code[split].y = em->re->length;
            }
        }
        return;
    }
    }
}

bounded_regex_t *brx_compile(const char *pattern, size_t length, size_t max_program, char *error, size_t error_size) {
    if (error && error_size) error[0] = '\0';
    parser_t ps = { pattern, pattern + length, error, error_size, 0 };
    node_t *tree = length ? parse_alt(&ps) : node_new(N_EMPTY);
    if (tree && ps.p < ps.end) { /* a ) with no ( */
        fail(&ps, "an unmatched )");
        node_free(tree);
        tree = NULL;
    }
    if (!tree) {
        if (error && error_size && error[0] == '\0') snprintf(error, error_size, "out of memory");
        return NULL;
    }
    bounded_regex_t *re = calloc(1, sizeof *re);
    emitter_t em = { re, 0, 0, max_program, false };
    if (re) {
        gen(&em, tree);
        instruction_t done;
        memset(&done, 0, sizeof done);
        done.op = OP_MATCH;
        emit(&em, done);
    }
    node_free(tree);
    if (!re || em.overflow) {
        if (error && error_size) snprintf(error, error_size, "the pattern is too complex (over %zu instructions)", max_program);
        brx_free(re);
        return NULL;
    }
    return re;
}

void brx_free(bounded_regex_t *re) {
    if (!re) return;
    free(re->code);
    free(re->sets);
    free(re);
}

/* ---- matching: Pike VM over the text ---- */

typedef struct {
    int *pcs;
    int count;
} thread_list_t;

/* Adds pc and what it reaches without consuming a byte; `mark` avoids duplicates per position. */
static void add_thread(const bounded_regex_t *re, thread_list_t *list, int *mark, int generation, int pc, size_t at, size_t length,
                       size_t *steps, int *stack) {
    int top = 0;
    stack[top++] = pc;
    while (top > 0) {
        pc = stack[--top];
        if (mark[pc] == generation) continue;
        mark[pc] = generation;
        (*steps)++;
        const instruction_t *in = &re->code[pc];
        switch (in->op) {
        case OP_JMP: stack[top++] = in->x; break;
        case OP_SPLIT: stack[top++] = in->y; stack[top++] = in->x; break;
        case OP_BOL: if (at == 0) stack[top++] = pc + 1; break;
        case OP_EOL: if (at == length) stack[top++] = pc + 1; break;
        default: list->pcs[list->count++] = pc; break;
        }
    }
}

brx_result_t brx_search(const bounded_regex_t *re, const char *text, size_t length, size_t step_budget) {
    int n = re->length;
    int *memory = malloc(sizeof(int) * ((size_t)n * 5 + 2));
    if (!memory) return BRX_BUDGET_EXCEEDED; /* no memory: refuse rather than guess */
    thread_list_t current = { memory, 0 }, next = { memory + n, 0 };
    int *mark = memory + 2 * n;
    int *stack = memory + 3 * n; /* 2n + 2: an unmarked pc is popped once and pushes at most two */
    for (int i = 0; i < n; i++) mark[i] = -1;
    size_t steps = 0;
    brx_result_t result = BRX_NO_MATCH;
    int generation = 0;
    for (size_t at = 0;; at++) {
        /* Searching: a new thread may start at every position. */
        add_thread(re, &current, mark, generation, 0, at, length, &steps, stack);
        generation++;
        next.count = 0;
        for (int i = 0; i < current.count; i++) {
            const instruction_t *in = &re->code[current.pcs[i]];
            steps++;
            if (in->op == OP_MATCH) { result = BRX_MATCH; goto done; }
            if (at >= length) continue;
            uint8_t c = (uint8_t)text[at];
            bool ok = (in->op == OP_ANY && c != '\n') || (in->op == OP_CHAR && in->c == c) ||
                      (in->op == OP_CLASS && set_has(&re->sets[in->set], c));
            if (ok) add_thread(re, &next, mark, generation, current.pcs[i] + 1, at + 1, length, &steps, stack);
        }
        if (steps > step_budget) { result = BRX_BUDGET_EXCEEDED; goto done; }
        if (at >= length) break;
        thread_list_t swap = current;
        current = next;
        next = swap;
    }
done:
    free(memory);
    return result;
}
