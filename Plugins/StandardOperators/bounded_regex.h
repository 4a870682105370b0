/*
 * A small regular-expression engine whose matching time is bounded, with the syntax and the
 * matching rules of ICU (NSRegularExpression, which the reference In-App Messaging SDK uses) for
 * everything it accepts. The pattern compiles to a program for a Thompson/Pike virtual machine,
 * which runs in time proportional to the input length times the program length (no
 * backtracking, so no catastrophic patterns), and the run also stops after a step budget.
 *
 * Matching works on Unicode code points of UTF-8 text (a byte that is not valid UTF-8 is a
 * character of its own that only `.`, negated classes and \W \D \S \H \V match) and searches
 * anywhere in the text: anchor with ^ and $ (or \A and \z) for a whole-string match.
 *
 * Syntax, as ICU:
 *   literals; escapes \t \n \r \f \a \e \cX \0ooo \xhh \x{h...} \uhhhh \Uhhhhhhhh; \Q...\E;
 *   an escaped punctuation character or an unknown escaped letter is that character;
 *   `.` (any character but a line terminator: \n \x0B \f \r \x85 \u2028 \u2029);
 *   classes [...] and [^...] with ranges and \d \D \w \W \s \S \h \H \v \V (Unicode: \d is
 *   Nd, \w is Alphabetic, marks, Nd, Pc and the joiners, \s is White_Space);
 *   anchors ^ $ \A \z \Z \G, word boundaries \b \B; \R (a line break);
 *   groups ( ), (?: ), (?<name> ), comments (?# ), flags (?imsxdu-imsxdu) and (?flags: );
 *   quantifiers * + ? {n} {n,} {n,m}, greedy or lazy (a trailing ?; the answer is the same).
 * Flags: i case-insensitive (Unicode simple case folding), m multi-line ^ $, s dot matches
 * line terminators, x free spacing with # comments, d Unix lines (only \n ends a line), u ignored.
 * Known differences from ICU: (?i) folds one character to one (ICU also matches "ß" with "SS"),
 * and the Unicode tables follow the Swift toolchain's Unicode version.
 *
 * Refused as invalid, as ICU refuses them: an empty pattern, unbalanced ( ) [ ], a quantifier
 * with nothing to repeat or after another quantifier, a { or } that is not a valid {n,m}, a
 * range that goes backwards, a backreference to a group that does not exist, a bad escape number.
 * Refused as unsupported (valid in ICU, but not linear or not implemented here): backreferences,
 * lookahead and lookbehind, atomic groups, possessive quantifiers, \p \P \N \X \k, nested classes
 * and class set operations, the w flag, and programs over the size limit.
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

/* Why a pattern did not compile. */
typedef enum {
    BRX_COMPILED = 0,
    BRX_INVALID = 1,     /* ICU refuses it too */
    BRX_UNSUPPORTED = 2, /* ICU accepts it; this engine does not (or it is too large) */
    BRX_NO_MEMORY = 3,
} brx_error_t;

/* Compiles `pattern` (UTF-8, `length` bytes). Returns NULL with the reason in `*kind` and a
 * message in `error` (size `error_size`) when the pattern does not compile; a program over
 * `max_program` instructions is BRX_UNSUPPORTED. */
bounded_regex_t *brx_compile(const char *pattern, size_t length, size_t max_program, brx_error_t *kind,
                             char *error, size_t error_size);

/* Searches `text` for a match, spending at most `step_budget` VM steps. Thread-safe: a compiled
 * regex is read-only while matching. */
brx_result_t brx_search(const bounded_regex_t *regex, const char *text, size_t length, size_t step_budget);

void brx_free(bounded_regex_t *regex);

#endif
