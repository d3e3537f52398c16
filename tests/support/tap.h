/* tap.h — a tiny TAP runner for tests that cannot use Criterion (tests/concurrency: Criterion
 * aborts under ThreadSanitizer). Each test is a function; a failed check prints the file:line and
 * the condition and fails that test; main() prints "1..N" and exits non-zero on any failure.
 *
 *   TAP_TEST(mailbox_keeps_fifo) { TAP_CHECK(x == 1, "x=%d", x); }
 *   int main(void) { return tap_run(TAP_LIST(mailbox_keeps_fifo)); }
 */
#ifndef EVOLVE_TEST_TAP_H
#define EVOLVE_TEST_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tap_case {
    const char *name;
    void (*fn)(int *failed);
};

#define TAP_TEST(name) static void name(int *tap_failed_)
#define TAP_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "# %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            *tap_failed_ = 1;                                                                      \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define TAP_CASE(name)                                                                             \
    {                                                                                              \
#name, name                                                                                \
    }

/* Runs the cases given (a NULL-terminated array); an argv[1] runs only the case of that name. */
static inline int tap_run(const struct tap_case *cases, int argc, char **argv)
{
    int n = 0, i, fails = 0;

    while (cases[n].name)
        n++;
    printf("1..%d\n", n);
    for (i = 0; i < n; i++) {
        int failed = 0;

        if (argc > 1 && strcmp(argv[1], cases[i].name)) {
            printf("ok %d - %s # SKIP not selected\n", i + 1, cases[i].name);
            continue;
        }
        cases[i].fn(&failed);
        printf("%s %d - %s\n", failed ? "not ok" : "ok", i + 1, cases[i].name);
        fflush(stdout);
        fails += failed;
    }
    return fails ? 1 : 0;
}

#endif
