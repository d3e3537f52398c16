/* The stdout line splitter: every chunking of a stream gives the same lines, a final line
 * without LF is delivered at the end, CR and blank lines are passed through. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/lines.h"

TestSuite(hns_lines, .timeout = 30);

struct got {
    char text[4096];
    size_t len, lines;
};

static int collect(void *arg, const char *line, size_t len)
{
    struct got *g = arg;

    cr_assert_lt(g->len + len + 1, sizeof(g->text));
    memcpy(g->text + g->len, line, len);
    g->len += len;
    g->text[g->len++] = '|';
    g->lines++;
    return 0;
}

static int stop_at_two(void *arg, const char *line, size_t len)
{
    (void)line;
    (void)len;
    return ++*(int *)arg == 2 ? -42 : 0;
}

Test(hns_lines, every_chunking_gives_the_same_lines)
{
    static const char stream[] =
        "{\"a\":1}\n\nsecond line\r\n\n{\"long\":\"xxxxxxxxxxxxxxxxx\"}\nlast";
    static const char want[] = "{\"a\":1}||second line\r||{\"long\":\"xxxxxxxxxxxxxxxxx\"}|last|";
    size_t n = sizeof(stream) - 1, chunk;

    for (chunk = 1; chunk <= n; chunk++) {
        struct hns_lines s;
        struct got g = {0};
        size_t off;

        hns_lines_init(&s);
        for (off = 0; off < n; off += chunk)
            cr_assert_eq(
                hns_lines_feed(&s, stream + off, off + chunk > n ? n - off : chunk, collect, &g),
                0);
        cr_assert_eq(hns_lines_finish(&s, collect, &g), 0);
        g.text[g.len] = '\0';
        cr_assert_str_eq(g.text, want, "chunk size %zu", chunk);
        cr_assert_eq(g.lines, 6);
        hns_lines_dispose(&s);
    }
}

Test(hns_lines, nothing_pending_means_no_last_line_and_errors_stop)
{
    struct hns_lines s;
    struct got g = {0};
    int calls = 0;

    hns_lines_init(&s);
    cr_assert_eq(hns_lines_feed(&s, "a\nb\n", 4, collect, &g), 0);
    cr_assert_eq(hns_lines_finish(&s, collect, &g), 0);
    cr_assert_eq(g.lines, 2);
    cr_assert_eq(hns_lines_feed(&s, "1\n2\n3\n", 6, stop_at_two, &calls), -42);
    cr_assert_eq(calls, 2);
    hns_lines_dispose(&s);
}
