/* Autohand parser under allocation failure: jansson's allocator fails at the n-th call for
 * n = 0, 1, ... until a line goes through; every failure must be a clean EVOLVE_ENOMEM (or, when
 * the failure hit only the error path, a still-valid event), with nothing leaked (ASan checks
 * leaks when each forked test ends). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "harness/harness.h"


TestSuite(hns_autohand_fault, .timeout = 60);

static long fail_at = -1, calls;

static void *failing_malloc(size_t n)
{
    if (fail_at >= 0 && calls++ == fail_at)
        return NULL;
    return malloc(n);
}

static void drop(void *payload, evolve_update_type_t type, json_t *event)
{
    (void)type;
    (*(size_t *)payload)++;
    json_decref(event);
}

static const char *const lines[] = {
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.preTool\",\"params\":{\"toolId\":\"t\","
    "\"toolName\":\"read_file\",\"args\":{\"path\":\"a\"},\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.postTool\",\"params\":{\"toolId\":\"t\","
    "\"toolName\":\"x\",\"success\":true,\"duration\":1,\"output\":\"o\",\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.stop\",\"params\":{\"tokensUsed\":1,"
    "\"tokensUsageStatus\":\"actual\",\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.permissionRequest\",\"params\":{\"tool\":"
    "\"w\",\"path\":\"p\",\"args\":{},\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.permissionRequest\",\"params\":{\"requestId\":"
    "\"r\",\"tool\":\"w\",\"context\":{\"path\":\"p\"},\"options\":[\"allow_once\"],"
    "\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.messageUpdate\",\"params\":{\"messageId\":\"m\","
    "\"delta\":\"d\",\"thought\":\"th\",\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.contextOverflow\",\"params\":{"
    "\"tokensBefore\":1,\"tokensAfter\":1,\"croppedCount\":1,\"usagePercent\":1.5,"
    "\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.stop\",\"params\":{\"tokensUsed\":"
    "9223372036854775808,\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.future\",\"params\":[1,{\"a\":null}]}",
    "not json at all",
};

Test(hns_autohand_fault, every_allocation_failure_is_clean)
{
    size_t i;

    json_set_alloc_funcs(failing_malloc, free);
    for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        long n;
        int done = 0;

        for (n = 0; !done && n < 10000; n++) {
            struct hns_parser *p = NULL;
            size_t events = 0;
            int rc;

            fail_at = -1;
            cr_assert_eq(hns_parser_new(&p, "autohand", drop, &events), 0);
            calls = 0;
            fail_at = n;
            rc = hns_parser_feed(p, lines[i], strlen(lines[i]));
            fail_at = -1;
            cr_assert(rc == 0 || rc == EVOLVE_ENOMEM, "line %zu, failure %ld: rc %d", i, n, rc);
            if (rc == EVOLVE_ENOMEM)
                cr_assert_eq(evolve_error_last()->code, EVOLVE_ENOMEM);
            else
                cr_assert(events >= 1, "line %zu, failure %ld: no event and no error", i, n);
            done = calls <= n; /* the allocation that would fail was never reached */
            hns_parser_free(p);
        }
        cr_assert(done, "line %zu never completed", i);
    }
    json_set_alloc_funcs(malloc, free);
}

Test(hns_autohand_fault, permission_reply_fails_cleanly)
{
    long n;
    int done = 0;

    json_set_alloc_funcs(failing_malloc, free);
    for (n = 0; !done && n < 1000; n++) {
        char *line = NULL;
        int rc;

        calls = 0;
        fail_at = n;
        rc = evolve_autohand_permission_reply(&line, "req-1", EVOLVE_PERMISSION_ALLOW_ONCE);
        fail_at = -1;
        cr_assert(rc == 0 || rc == EVOLVE_ENOMEM, "rc %d", rc);
        if (rc == 0)
            cr_assert_not_null(line);
        else
            cr_assert_null(line);
        evolve_autohand_reply_free(line);
        done = calls <= n;
    }
    cr_assert(done);
    json_set_alloc_funcs(malloc, free);
}
