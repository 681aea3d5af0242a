/* cli.c: error reporting, cleanup of temporary outputs, options, numbers. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- temporary files to remove on failure ------------------------------ */

/* Fixed arrays, not malloc'd strings, so that the signal handler can read
 * them safely. An empty string marks a free slot. */
#define MAX_PENDING 4
#define PENDING_PATH_MAX 4096
static char pending[MAX_PENDING][PENDING_PATH_MAX];

static void remove_pending(void)
{
    for (int i = 0; i < MAX_PENDING; i++)
        if (pending[i][0] != '\0')
            unlink(pending[i]);
}

static void on_fatal_signal(int sig)
{
    remove_pending(); /* unlink is async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Every signal whose default action ends the process and that a handler
 * may catch, but those of a fault in the program itself (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT), whose default action, a core
 * dump or a sanitizer's report, is worth more than removing a temporary
 * file. SIGKILL and SIGSTOP cannot be caught. */
static const int terminating_signals[] = {
    SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
#ifdef SIGVTALRM
    SIGVTALRM,
#endif
#ifdef SIGPROF
    SIGPROF,
#endif
#ifdef SIGXCPU
    SIGXCPU,
#endif
#ifdef SIGXFSZ
    SIGXFSZ,
#endif
#ifdef SIGPOLL
    SIGPOLL,
#endif
#ifdef SIGPWR
    SIGPWR,
#endif
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
};

void cleanup_install_signal_handlers(void)
{
    const int *signals = terminating_signals;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_fatal_signal;
    sigfillset(&action.sa_mask); /* one handler at a time */
    for (size_t i = 0; i < sizeof terminating_signals / sizeof terminating_signals[0]; i++) {
        struct sigaction old;
        /* a signal ignored by whoever started prox stays ignored (nohup) */
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(signals[i], &action, NULL);
    }
}

int cleanup_register(const char *path)
{
    if (strlen(path) >= PENDING_PATH_MAX)
        die(EXIT_IO, "%s: path too long", path);
    for (int i = 0; i < MAX_PENDING; i++) {
        if (pending[i][0] == '\0') {
            memcpy(pending[i], path, strlen(path) + 1);
            return i;
        }
    }
    die(EXIT_INTERNAL, "too many output files open");
}

void cleanup_forget(int slot)
{
    pending[slot][0] = '\0';
}

/* ---- errors ------------------------------------------------------------ */

/* "prox: [FILE:LINE: ]message" on stderr, then clean up and exit. */
static _Noreturn void vdie(int code, const char *file, int64_t line, const char *fmt,
                           va_list args)
{
    fflush(stdout);
    fputs("prox: ", stderr);
    if (file != NULL)
        fprintf(stderr, "%s:%lld: ", file, (long long)line);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    remove_pending();
    exit(code);
}

void die(int code, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vdie(code, NULL, 0, fmt, args);
}

void die_at(int code, const char *file, int64_t line, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vdie(code, file, line, fmt, args);
}

void die_status(prox_status status, const char *what)
{
    int code = status == PROX_ERR_NO_MEMORY ? EXIT_NO_MEMORY : EXIT_DATA;
    const char *detail = prox_last_error();
    if (detail == NULL || detail[0] == '\0')
        detail = prox_status_string(status);
    die(code, "%s: %s", what, detail);
}

void die_usage(const char *command, const char *fmt, ...)
{
    fflush(stdout);
    fputs("prox: ", stderr);
    va_list args;
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    if (command != NULL)
        fprintf(stderr, "\nTry 'prox %s --help'.\n", command);
    else
        fputs("\nTry 'prox --help'.\n", stderr);
    remove_pending();
    exit(EXIT_USAGE);
}

/* ---- memory ------------------------------------------------------------ */

void *xmalloc(size_t size)
{
    void *p = malloc(size > 0 ? size : 1);
    if (p == NULL)
        die(EXIT_NO_MEMORY, "out of memory (allocating %zu bytes)", size);
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size > 0 ? size : 1);
    if (p == NULL)
        die(EXIT_NO_MEMORY, "out of memory (allocating %zu bytes)", size);
    return p;
}

size_t checked_size(int64_t count, size_t size)
{
    if (count < 0 || (uint64_t)count > SIZE_MAX / size)
        die(EXIT_NO_MEMORY, "out of memory (%lld items of %zu bytes)", (long long)count, size);
    return (size_t)count * size;
}

/* ---- options ----------------------------------------------------------- */

opt_parser opt_init(const char *command, const opt_spec *specs, int count, int argc, char **argv)
{
    opt_parser p = { command, specs, count, argv, argc, 0, false, NULL };
    return p;
}

static const opt_spec *find_long(const opt_parser *p, const char *name, size_t len)
{
    for (int i = 0; i < p->count; i++)
        if (strlen(p->specs[i].long_name) == len && memcmp(p->specs[i].long_name, name, len) == 0)
            return &p->specs[i];
    return NULL;
}

static const opt_spec *find_short(const opt_parser *p, char name)
{
    for (int i = 0; i < p->count; i++)
        if (p->specs[i].short_name != 0 && p->specs[i].short_name == name)
            return &p->specs[i];
    return NULL;
}

/* The value of an option that takes one: attached (inline) or the next
 * argument. */
static const char *option_value(opt_parser *p, const opt_spec *spec, const char *inline_value)
{
    if (!spec->takes_value) {
        if (inline_value != NULL)
            die_usage(p->command, "option '--%s' takes no value", spec->long_name);
        return NULL;
    }
    if (inline_value != NULL)
        return inline_value;
    if (p->next >= p->argc)
        die_usage(p->command, "option '%s' needs a value", p->current);
    return p->argv[p->next++];
}

int opt_next(opt_parser *p, const char **value)
{
    *value = NULL;
    if (p->next >= p->argc)
        return OPT_END;
    const char *arg = p->argv[p->next++];
    p->current = arg;
    if (p->positional_only || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return OPT_ARG;
    }
    if (strcmp(arg, "--") == 0) {
        p->positional_only = true;
        return opt_next(p, value);
    }
    const opt_spec *spec;
    const char *inline_value = NULL;
    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        spec = find_long(p, name, eq ? (size_t)(eq - name) : strlen(name));
        inline_value = eq ? eq + 1 : NULL;
    } else {
        spec = find_short(p, arg[1]);
        inline_value = arg[2] != '\0' ? arg + 2 : NULL;
    }
    if (spec == NULL)
        die_usage(p->command, "unknown option '%s'", arg);
    *value = option_value(p, spec, inline_value);
    return spec->id;
}

/* ---- numbers ----------------------------------------------------------- */

static _Noreturn void bad_number(const opt_parser *p, const char *text, const char *why)
{
    die_usage(p->command, "option '%s': %s: '%s'", p->current, why, text);
}

int64_t parse_count(const opt_parser *p, const char *text, int64_t min, int64_t max)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end != text && (*end == 'e' || *end == 'E' || *end == '.')) {
        /* 1e6, 2.5e5: fine when the value is a whole number. */
        double d = strtod(text, &end);
        if (*end != '\0' || d != floor(d) || !(fabs(d) < 9.2e18))
            bad_number(p, text, "not a whole number");
        v = (long long)d;
    } else if (end == text || *end != '\0' || errno == ERANGE) {
        bad_number(p, text, "not a whole number");
    }
    if (v < min || v > max) {
        die_usage(p->command, "option '%s': %lld is out of range [%lld, %lld]", p->current, v,
                  (long long)min, (long long)max);
    }
    return v;
}

uint64_t parse_u64(const opt_parser *p, const char *text)
{
    char *end;
    errno = 0;
    /* Decimal, or hexadecimal with 0x; never octal (a seed of 010 is ten). */
    int base = text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 16 : 10;
    unsigned long long v = strtoull(text, &end, base);
    if (end == text || *end != '\0' || errno == ERANGE || text[0] == '-')
        bad_number(p, text, "not an unsigned 64-bit integer");
    return v;
}

void parse_workload_name(const opt_parser *p, const char *text, const char *name, bool *seen)
{
    if (*seen || strcmp(text, name) != 0)
        die_usage(p->command, "one workload only (%s), not '%s'", name, text);
    *seen = true;
}

double parse_double(const opt_parser *p, const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\0')
        bad_number(p, text, "not a number");
    if (!isfinite(v))
        bad_number(p, text, "not a finite number");
    return v;
}

int parse_double_list(const opt_parser *p, const char *text, double *out, int max)
{
    int n = 0;
    const char *s = text;
    for (;;) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || (*end != ',' && *end != '\0') || !isfinite(v))
            bad_number(p, text, "expected comma-separated numbers");
        if (n == max)
            bad_number(p, text, "too many values");
        out[n++] = v;
        if (*end == '\0')
            return n;
        s = end + 1;
    }
}

/* ---- helpers ----------------------------------------------------------- */

double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double peak_rss_mb(void)
{
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0)
        return 0.0;
    return (double)usage.ru_maxrss / 1024.0; /* Linux reports kilobytes */
}

int effective_threads(int threads)
{
    if (threads > 0)
        return threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* OpenMP starts its threads at the first parallel region. Started here,
 * before the input is read, that one-time cost stays out of the build and
 * query times --stats reports, as it stays out of every call but the first
 * in a program that links prox. It is large where the other cores sleep: a
 * virtual machine wakes a sleeping virtual CPU through its host. */
static void start_thread_team(void)
{
#ifdef _OPENMP
    if (omp_get_max_threads() < 2)
        return;
    int joined = 0; /* a region with no work is one the compiler may drop */
#pragma omp parallel reduction(+ : joined)
    joined++;
    (void)joined;
#endif
}

void set_thread_limit(int threads)
{
#ifdef _OPENMP
    if (threads > 0)
        omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    start_thread_team();
}

bool has_suffix(const char *text, const char *suffix)
{
    size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}
