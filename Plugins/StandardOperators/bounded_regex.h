/*
 * A small regular-expression engine whose matching time is bounded: the pattern compiles to a
 * program for a Thompson/Pike virtual machine, which runs in time proportional to the input length
 * times the program length (no backtracking, so no catastrophic patterns), and the run also stops
 * after a step budget. Syntax: literals, `.`, `[...]` and `[^...]` classes with ranges, `\d \w \s`
 * (and `\D \W \S`), escapes, `^` and `$`, groups `( )`, alternation `|`, and the quantifiers
 * `* + ? {m} {m,} {m,n}` (greedy). Matching searches anywhere in the text (anchor with ^ and $).
 */
#ifndef BOUNDED_REGEX_H
#define BOUNDED_REGEX_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bounded_regex bounded_regex_t;

typedef enum {
    BRX_MATCH = 1,
    BRX_NO_MATCH = 0,
    BRX_BUDGET_EXCEEDED = -1,
} brx_result_t;

/* Compiles `pattern` (UTF-8, `length` bytes). Returns NULL with a message in `error` (size
 * `error_size`) when the pattern is invalid or too large (over `max_program` instructions). */
bounded_regex_t *brx_compile(const char *pattern, size_t length, size_t max_program, char *error, size_t error_size);

/* Searches `text` for a match, spending at most `step_budget` VM steps. Thread-safe: a compiled
 * regex is read-only while matching. */
brx_result_t brx_search(const bounded_regex_t *regex, const char *text, size_t length, size_t step_budget);

void brx_free(bounded_regex_t *regex);

#endif
