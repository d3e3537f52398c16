/* The local session log: file name, _meta once before the first line, _prompt, verbatim raw
 * lines, _sessionEnd, secrets never written. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <regex.h>
#include <string.h>

#include "core/sessionlog.h"
#include "evolve/evolve.h"
#include "support/support.h"

static char dir[512];

static void setup(void)
{
    ts_mkdtemp(dir, sizeof(dir), "sessionlog");
}

static void teardown(void)
{
    ts_rmtree(dir);
}

TestSuite(core_sessionlog, .init = setup, .fini = teardown, .timeout = 10);

Test(core_sessionlog, tag_is_prefix_and_16_hex)
{
    char a[64], b[64];
    regex_t re;

    cr_assert_eq(core_session_tag_new(a, sizeof(a), "my-prefix"), 0);
    cr_assert_eq(core_session_tag_new(b, sizeof(b), NULL), 0);
    regcomp(&re, "^my-prefix-[0-9a-f]{16}$", REG_EXTENDED | REG_NOSUB);
    cr_assert_eq(regexec(&re, a, 0, NULL, 0), 0, "%s", a);
    regfree(&re);
    cr_assert_eq(strncmp(b, "evolve-", 7), 0);
    cr_assert_eq(strlen(b), 7 + 16);
    cr_assert_eq(core_session_tag_new(a, 10, "long-prefix"), EVOLVE_EINVAL);
}

Test(core_sessionlog, file_name_and_line_sequence)
{
    const char *secrets[] = {"sk-secret-value-123", NULL};
    struct core_sessionlog_meta m = {.dir = dir,
                                     .tag = "evolve-00112233445566ff",
                                     .provider = "local",
                                     .sandbox_id = "local-ab12",
                                     .agent = "claude",
                                     .model = "opus",
                                     .secrets = secrets};
    struct core_sessionlog *log;
    const char raw[] = "{\"type\":\"assistant\",\"message\":{\"content\":[]}}";
    const char leak[] = "{\"env\":\"ANTHROPIC_API_KEY=sk-secret-value-123\"}";
    char *body, *name;
    regex_t re;

    cr_assert_eq(core_sessionlog_open(&log, &m), 0, "%s", evolve_error_last()->message);
    name = strrchr(core_sessionlog_path(log), '/') + 1;
    regcomp(&re,
            "^evolve-00112233445566ff_local_local-ab12_claude_"
            "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{3}Z\\.jsonl$",
            REG_EXTENDED | REG_NOSUB);
    cr_assert_eq(regexec(&re, name, 0, NULL, 0), 0, "%s", name);
    regfree(&re);
    cr_assert_eq(core_sessionlog_prompt(log, "say \"hi\""), 0);
    cr_assert_eq(core_sessionlog_line(log, raw, strlen(raw)), 0);
    cr_assert_eq(core_sessionlog_line(log, "   ", 3), 0);
    cr_assert_eq(core_sessionlog_line(log, leak, strlen(leak)), 0);
    cr_assert_eq(core_sessionlog_end(log), 0);
    cr_assert_eq(core_sessionlog_line(log, raw, strlen(raw)), 0, "ignored after end");
    body = ts_read_file(core_sessionlog_path(log), NULL);
    cr_assert_not_null(body);
    cr_assert_eq(
        strncmp(body,
                "{\"_meta\":{\"tag\":\"evolve-00112233445566ff\",\"provider\":\"local\","
                "\"agent\":\"claude\",\"model\":\"opus\",\"sandbox_id\":\"local-ab12\","
                "\"timestamp\":\"",
                strlen("{\"_meta\":{\"tag\":\"evolve-00112233445566ff\",\"provider\":\"local\","
                       "\"agent\":\"claude\",\"model\":\"opus\",\"sandbox_id\":\"local-ab12\","
                       "\"timestamp\":\"")),
        0, "%s", body);
    cr_assert_not_null(strstr(body, "\n{\"_prompt\":{\"text\":\"say \\\"hi\\\"\"}}\n"
                                    "{\"type\":\"assistant\",\"message\":{\"content\":[]}}\n"
                                    "{\"env\":\"ANTHROPIC_API_KEY=[REDACTED]\"}\n"
                                    "{\"_sessionEnd\":{\"timestamp\":\""),
                       "%s", body);
    cr_assert_null(strstr(body, "sk-secret"));
    cr_assert_null(strstr(strstr(body, "_meta") + 1, "_meta"), "exactly one _meta line");
    free(body);
    core_sessionlog_free(log);
}

Test(core_sessionlog, unwritable_dir_is_an_io_error_naming_it)
{
    struct core_sessionlog_meta m = {.dir = "/proc/evolve-nope",
                                     .tag = "t",
                                     .provider = "local",
                                     .sandbox_id = "s",
                                     .agent = "claude"};
    struct core_sessionlog *log;

    cr_assert_eq(core_sessionlog_open(&log, &m), EVOLVE_EIO);
    cr_assert_not_null(strstr(evolve_error_last()->message, "/proc/evolve-nope"));
}
