/* cli.h: what every `prox` command shares: exit codes, error reporting,
 * checked allocation, option and number parsing, clocks and memory use. */
#ifndef PROX_TOOLS_CLI_H
#define PROX_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prox/core.h"

/* Exit codes; `prox --help` documents them. */
enum {
    EXIT_OK = 0,
    EXIT_INTERNAL = 1, /* a self-check failed (bench: algorithms disagree) */
    EXIT_USAGE = 2,
    EXIT_DATA = 3,
    EXIT_IO = 4,
    EXIT_NO_MEMORY = 5,
};

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* Print "prox: <message>" to stderr, remove every pending temporary output
 * file and exit with `code`. */
_Noreturn void die(int code, const char *fmt, ...) CLI_PRINTF(2, 3);
/* The same, about a place in a file: "prox: FILE:LINE: <message>". */
_Noreturn void die_at(int code, const char *file, int64_t line, const char *fmt, ...)
    CLI_PRINTF(4, 5);
/* A failed library call: the exit code follows the status and the message
 * ends with prox_last_error(). */
_Noreturn void die_status(prox_status status, const char *what);
/* Usage error of `command`: the message plus a pointer to its --help. */
_Noreturn void die_usage(const char *command, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Temporary output files to delete if the program dies (or is killed by
 * any signal that terminates by default and can be caught, but those of a
 * fault in the program: cli.c lists them) before they are renamed into
 * place. Only SIGKILL, or a crash, can leave one behind. */
void cleanup_install_signal_handlers(void);
int cleanup_register(const char *path); /* returns a slot */
void cleanup_forget(int slot);

/* Allocation that exits with EXIT_NO_MEMORY on failure. */
void *xmalloc(size_t size);
void *xrealloc(void *ptr, size_t size);
/* count * size, exiting with EXIT_NO_MEMORY on overflow. */
size_t checked_size(int64_t count, size_t size);

/* Command-line options. A command lists what it accepts; opt_next returns
 * the id of the next option (with its value, if it takes one), OPT_ARG for a
 * positional argument, or OPT_END. Accepts --name VALUE, --name=VALUE,
 * -x VALUE, -xVALUE; "--" ends the options; "-" alone is positional. Unknown
 * options and missing values are usage errors. */
typedef struct opt_spec {
    const char *long_name; /* without the leading "--" */
    char short_name;       /* 0 if none */
    bool takes_value;
    int id; /* > 0 */
} opt_spec;

enum { OPT_END = 0, OPT_ARG = -1 };

typedef struct opt_parser {
    const char *command; /* for messages: "pairs" */
    const opt_spec *specs;
    int count;
    char **argv;
    int argc;
    int next;
    bool positional_only;
    const char *current; /* the option being handled, for messages */
} opt_parser;

opt_parser opt_init(const char *command, const opt_spec *specs, int count, int argc, char **argv);
int opt_next(opt_parser *p, const char **value);

/* Option values; anything malformed or out of range is a usage error that
 * names the option. parse_count also takes 1e6-style integers. */
int64_t parse_count(const opt_parser *p, const char *text, int64_t min, int64_t max);
uint64_t parse_u64(const opt_parser *p, const char *text);
double parse_double(const opt_parser *p, const char *text);
/* The one positional argument of a single-workload command (`prox bench
 * NAME`): NAME once, anything else or a second one is a usage error. */
void parse_workload_name(const opt_parser *p, const char *text, const char *name, bool *seen);
/* Comma-separated doubles: returns how many were read (at most max). */
int parse_double_list(const opt_parser *p, const char *text, double *out, int max);

/* Helpers. */
double now_seconds(void);          /* CLOCK_MONOTONIC */
double cpu_seconds(void);          /* CLOCK_PROCESS_CPUTIME_ID: all threads of the process */
/* The median of values[0 .. n), n >= 1 (sorts them in place). */
double median(double *values, int n);
double peak_rss_mb(void);          /* getrusage ru_maxrss */
int effective_threads(int threads); /* what threads = 0 means here */
/* threads > 0: every OpenMP region of the tool (output formatting too) uses
 * at most that many threads, not only the library's calls. Starts OpenMP's
 * threads, so that no timed phase pays for their start. */
void set_thread_limit(int threads);
bool has_suffix(const char *text, const char *suffix);

#endif
