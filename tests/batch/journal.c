/* The results journal: appends survive reopen, the last line per id wins, a torn tail from a
 * crash is cut and reported, junk lines are counted, and nothing else is lost. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/journal.h"
#include "evolve/evolve.h"
#include "support/support.h"

static char dir[512];

static void setup(void)
{
    ts_mkdtemp(dir, sizeof(dir), "journal");
}

static void teardown(void)
{
    ts_rmtree(dir);
}

TestSuite(bat_journal, .init = setup, .fini = teardown, .timeout = 10);

static void append(struct bat_journal *j, const char *id, const char *status)
{
    json_t *r = json_pack("{s:s, s:s}", "id", id, "status", status);

    cr_assert_eq(bat_journal_append(j, r), 0, "%s", evolve_error_last()->message);
    json_decref(r);
}

Test(bat_journal, reopen_sees_every_result_and_last_wins)
{
    struct bat_journal *j;
    json_t *done;
    int torn;
    size_t bad;

    cr_assert_eq(bat_journal_open(&j, dir, &done, &torn, &bad), 0);
    cr_assert_eq(json_object_size(done), 0);
    json_decref(done);
    append(j, "a", "success");
    append(j, "b", "failed");
    append(j, "b", "success");
    bat_journal_free(j);
    cr_assert_eq(bat_journal_open(&j, dir, &done, &torn, &bad), 0);
    cr_assert_eq(json_object_size(done), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(done, "b"), "status")),
                     "success");
    cr_assert_eq(torn, 0);
    cr_assert_eq(bad, 0);
    json_decref(done);
    bat_journal_free(j);
}

Test(bat_journal, torn_tail_is_cut_and_appends_continue_on_a_line_boundary)
{
    struct bat_journal *j;
    char path[600];
    const char body[] = "{\"id\":\"a\",\"status\":\"success\"}\n"
                        "not json\n"
                        "{\"id\":\"b\",\"sta";
    json_t *done;
    int torn;
    size_t bad, len;
    char *after;

    snprintf(path, sizeof(path), "%s/results.jsonl", dir);
    ts_write_file(path, body, strlen(body));
    cr_assert_eq(bat_journal_open(&j, dir, &done, &torn, &bad), 0);
    cr_assert_eq(torn, 1);
    cr_assert_eq(bad, 1);
    cr_assert_eq(json_object_size(done), 1);
    cr_assert_null(json_object_get(done, "b"), "the torn task is not done: it reruns");
    append(j, "b", "success");
    bat_journal_free(j);
    json_decref(done);
    after = ts_read_file(path, &len);
    cr_assert_str_eq(after, "{\"id\":\"a\",\"status\":\"success\"}\nnot json\n"
                            "{\"id\":\"b\",\"status\":\"success\"}\n");
    free(after);
}

Test(bat_journal, unwritable_outdir_names_the_file)
{
    struct bat_journal *j;
    json_t *done;
    int torn;
    size_t bad;

    cr_assert_eq(bat_journal_open(&j, "/nonexistent/out", &done, &torn, &bad), EVOLVE_EIO);
    cr_assert_not_null(strstr(evolve_error_last()->message, "/nonexistent/out/results.jsonl"));
    cr_assert_null(done);
}

Test(bat_journal, group_append_writes_every_line_in_order)
{
    struct bat_journal *j;
    json_t *done, *rs[3];
    char path[600], *text;
    int torn, i;
    size_t bad;

    cr_assert_eq(bat_journal_open(&j, dir, &done, &torn, &bad), 0);
    json_decref(done);
    for (i = 0; i < 3; i++)
        rs[i] = json_pack("{s:s, s:s}", "id", i == 2 ? "x" : (i ? "y" : "x"), "status",
                          i == 2 ? "success" : "failed");
    cr_assert_eq(bat_journal_append_many(j, rs, 3), 0);
    for (i = 0; i < 3; i++)
        json_decref(rs[i]);
    bat_journal_free(j);
    snprintf(path, sizeof(path), "%s/results.jsonl", dir);
    text = ts_read_file(path, NULL);
    cr_assert_str_eq(text,
                     "{\"id\":\"x\",\"status\":\"failed\"}\n{\"id\":\"y\",\"status\":\"failed\"}\n"
                     "{\"id\":\"x\",\"status\":\"success\"}\n");
    free(text);
    cr_assert_eq(bat_journal_open(&j, dir, &done, &torn, &bad), 0);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(done, "x"), "status")),
                     "success", "the later line of the group wins");
    json_decref(done);
    bat_journal_free(j);
}
