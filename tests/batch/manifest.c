/* The task manifest: valid lines become tasks with defaults; every bad line is reported with
 * file:line and a reason; sharding is deterministic and disjoint. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "batch/manifest.h"
#include "evolve/evolve.h"
#include "support/support.h"

static char dir[512];

static void setup(void)
{
    ts_mkdtemp(dir, sizeof(dir), "manifest");
}

static void teardown(void)
{
    ts_rmtree(dir);
}

TestSuite(bat_manifest, .init = setup, .fini = teardown, .timeout = 10);

static bool known(const char *name)
{
    return !strcmp(name, "claude") || !strcmp(name, "codex");
}

static const char *write_manifest(const char *body)
{
    static char path[600];

    snprintf(path, sizeof(path), "%s/tasks.jsonl", dir);
    ts_write_file(path, body, strlen(body));
    return path;
}

Test(bat_manifest, valid_lines_get_defaults_and_overrides)
{
    struct bat_defaults d = {.agent = "codex", .timeout_ms = 5000, .agent_known = known};
    struct bat_manifest *m;
    char ctx[600];
    const char *p;

    snprintf(ctx, sizeof(ctx), "%s/notes.txt", dir);
    ts_write_file(ctx, "hello", 5);
    p = write_manifest("{\"id\":\"a\",\"prompt\":\"do a\"}\n"
                       "\n"
                       "{\"id\":\"b\",\"prompt\":\"do b\",\"agent\":\"claude\",\"model\":\"opus\","
                       "\"timeoutMs\":9,\"attempts\":3,\"tags\":[\"x\",\"y\"],\"from\":\"latest\","
                       "\"context\":{\"inline.txt\":\"text\",\"n.txt\":{\"file\":\"notes.txt\"}},"
                       "\"files\":{\"src\":{\"dir\":\".\"}},\"schema\":{\"type\":\"object\"},"
                       "\"systemPrompt\":\"be brief\"}\n");
    cr_assert_eq(bat_manifest_load(&m, p, &d), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(m->count, 2);
    cr_assert_str_eq(m->tasks[0].agent, "codex");
    cr_assert_eq(m->tasks[0].timeout_ms, 5000);
    cr_assert_eq(m->tasks[0].attempts, 1);
    cr_assert_null(m->tasks[0].model);
    cr_assert_null(m->tasks[0].tags[0]);
    cr_assert_eq(m->tasks[1].line, 3);
    cr_assert_str_eq(m->tasks[1].agent, "claude");
    cr_assert_str_eq(m->tasks[1].model, "opus");
    cr_assert_eq(m->tasks[1].timeout_ms, 9);
    cr_assert_eq(m->tasks[1].attempts, 3);
    cr_assert_str_eq(m->tasks[1].tags[1], "y");
    cr_assert_str_eq(m->tasks[1].from, "latest");
    cr_assert_str_eq(m->tasks[1].system_prompt, "be brief");
    cr_assert_eq(m->tasks[1].context_count, 2);
    cr_assert_eq(m->tasks[1].context[0].kind, BAT_SOURCE_INLINE);
    cr_assert_str_eq(m->tasks[1].context[0].text, "text");
    cr_assert_eq(m->tasks[1].context[1].kind, BAT_SOURCE_FILE);
    cr_assert_str_eq(m->tasks[1].context[1].local_path, ctx);
    cr_assert_eq(m->tasks[1].files[0].kind, BAT_SOURCE_DIR);
    cr_assert_not_null(m->tasks[1].schema);
    cr_assert_eq(m->problems_count, 0);
    bat_manifest_free(m);
}

Test(bat_manifest, every_bad_line_is_reported_with_its_line_number)
{
    struct bat_defaults d = {.agent_known = known};
    struct bat_manifest *m;
    const char *p = write_manifest(
        "{\"id\":\"ok\",\"prompt\":\"fine\"}\n"
        "{\"id\":\"x\",\"prompt\":\n"
        "{\"prompt\":\"no id\"}\n"
        "{\"id\":\"no-prompt\"}\n"
        "{\"id\":\"ok\",\"prompt\":\"dup\"}\n"
        "{\"id\":\"ag\",\"prompt\":\"p\",\"agent\":\"nope\"}\n"
        "{\"id\":\"f\",\"prompt\":\"p\",\"context\":{\"a\":{\"file\":\"missing\"}}}\n"
        "[1,2]\n"
        "{\"id\":\"t\",\"prompt\":\"p\",\"timeoutMs\":\"soon\"}\n"
        "{\"id\":\"e\",\"prompt\":\"p\",\"files\":{\"../up\":\"x\"}}\n"
        "{\"id\":\"u\",\"prompt\":\"p\",\"promt\":\"typo\"}\n");
    const char *want[] = {
        ":2: invalid JSON",
        ":3: \"id\" is required",
        ":4: \"prompt\" is required",
        ":5: duplicate id \"ok\"",
        ":6: unknown agent \"nope\"",
        ":7: context \"a\": cannot read",
        ":8: a task must be a JSON object",
        ":9: \"timeoutMs\" must be an integer",
        ":10: files path \"../up\" must be relative",
        ":11: unknown field \"promt\"",
    };
    size_t i;

    cr_assert_eq(bat_manifest_load(&m, p, &d), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "and 9 more invalid lines"), "%s",
                       evolve_error_last()->message);
    cr_assert_not_null(m, "the valid rest is still returned for --skip-invalid");
    cr_assert_eq(m->count, 1);
    cr_assert_str_eq(m->tasks[0].id, "ok");
    cr_assert_eq(m->problems_count, sizeof(want) / sizeof(want[0]));
    for (i = 0; i < m->problems_count; i++) {
        cr_assert_not_null(strstr(m->problems[i], want[i]), "problem %zu: \"%s\" lacks \"%s\"", i,
                           m->problems[i], want[i]);
        cr_assert_eq(strncmp(m->problems[i], p, strlen(p)), 0, "names the file: %s",
                     m->problems[i]);
    }
    bat_manifest_free(m);
}

Test(bat_manifest, missing_file_is_an_io_error_naming_it)
{
    struct bat_manifest *m = (void *)1;

    cr_assert_eq(bat_manifest_load(&m, "/nonexistent/tasks.jsonl", NULL), EVOLVE_EIO);
    cr_assert_null(m);
    cr_assert_not_null(strstr(evolve_error_last()->message, "/nonexistent/tasks.jsonl"));
}

Test(bat_manifest, schema_from_file_and_bad_schema_file)
{
    struct bat_defaults d = {.agent_known = known};
    struct bat_manifest *m;
    char sp[600];
    const char *p;

    snprintf(sp, sizeof(sp), "%s/s.json", dir);
    ts_write_file(sp, "{\"type\":\"integer\"}", 18);
    snprintf(sp, sizeof(sp), "%s/bad.json", dir);
    ts_write_file(sp, "{nope", 5);
    p = write_manifest("{\"id\":\"a\",\"prompt\":\"p\",\"schema\":\"s.json\"}\n"
                       "{\"id\":\"b\",\"prompt\":\"p\",\"schema\":\"bad.json\"}\n");
    cr_assert_eq(bat_manifest_load(&m, p, &d), EVOLVE_EINVAL);
    cr_assert_eq(m->count, 1);
    cr_assert_str_eq(json_string_value(json_object_get(m->tasks[0].schema, "type")), "integer");
    cr_assert_not_null(strstr(m->problems[0], ":2: schema file"), "%s", m->problems[0]);
    bat_manifest_free(m);
}

Test(bat_manifest, shards_are_disjoint_and_cover_everything)
{
    struct bat_defaults d = {.agent_known = known};
    struct bat_manifest *m;
    char body[300 * 48], *w = body;
    size_t i, hits[300] = {0};
    unsigned s, idx, cnt;

    for (i = 0; i < 300; i++)
        w += snprintf(w, sizeof(body) - (size_t)(w - body),
                      "{\"id\":\"task-%zu\",\"prompt\":\"p\"}\n", i);
    cr_assert_eq(bat_manifest_load(&m, write_manifest(body), &d), 0);
    for (s = 1; s <= 3; s++) {
        size_t in = 0;

        for (i = 0; i < m->count; i++)
            if (bat_task_in_shard(&m->tasks[i], s, 3)) {
                hits[i]++;
                in++;
            }
        cr_assert_gt(in, 50, "shard %u/3 got only %zu of 300", s, in);
    }
    for (i = 0; i < 300; i++)
        cr_assert_eq(hits[i], 1, "task %zu ran %zu times across shards", i, hits[i]);
    bat_manifest_free(m);
    cr_assert_eq(bat_shard_parse("2/3", &idx, &cnt), 0);
    cr_assert(idx == 2 && cnt == 3);
    cr_assert_eq(bat_shard_parse("4/3", &idx, &cnt), EVOLVE_EINVAL);
    cr_assert_eq(bat_shard_parse("0/3", &idx, &cnt), EVOLVE_EINVAL);
    cr_assert_eq(bat_shard_parse("x", &idx, &cnt), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "--shard \"x\""));
}

Test(bat_manifest, per_task_provider)
{
    struct bat_defaults d = {.agent_known = known};
    struct bat_manifest *m;
    const char *p = write_manifest("{\"id\":\"a\",\"prompt\":\"p\",\"provider\":\"e2b\"}\n"
                                   "{\"id\":\"b\",\"prompt\":\"p\"}\n"
                                   "{\"id\":\"c\",\"prompt\":\"p\",\"provider\":\"modal\"}\n"
                                   "{\"id\":\"d\",\"prompt\":\"p\",\"provider\":\"aws\"}\n");

    cr_assert_eq(bat_manifest_load(&m, p, &d), EVOLVE_EINVAL);
    cr_assert_eq(m->count, 2);
    cr_assert_str_eq(m->tasks[0].provider, "e2b");
    cr_assert_null(m->tasks[1].provider, "the batch's provider applies");
    cr_assert_not_null(strstr(m->problems[0], ":3: Modal is not supported yet"), "%s",
                       m->problems[0]);
    cr_assert_not_null(strstr(m->problems[1], ":4: unknown \"provider\""), "%s", m->problems[1]);
    bat_manifest_free(m);
}
