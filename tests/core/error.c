/* Tests of the thread-local last error and evolve_strerror. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "evolve/evolve.h"

TestSuite(core_error, .timeout = 10);

Test(core_error, set_returns_code_and_formats_message)
{
    int rc = core_error_set(EVOLVE_EINVAL, "%s:%d: \"id\" must be a string", "m.jsonl", 3);

    cr_assert_eq(rc, EVOLVE_EINVAL);
    cr_assert_eq(evolve_error_last()->code, EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message, "m.jsonl:3: \"id\" must be a string");
}

Test(core_error, clear_gives_ok_and_never_null)
{
    core_error_set(EVOLVE_EIO, "x");
    evolve_error_clear();
    cr_assert_eq(evolve_error_last()->code, EVOLVE_OK);
    cr_assert_not_null(evolve_error_last()->message);
}

Test(core_error, prefix_adds_source)
{
    core_error_set(EVOLVE_EINVAL, "missing \"prompt\"");
    cr_assert_eq(core_error_prefix("%s:%d: ", "tasks.jsonl", 7), EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message, "tasks.jsonl:7: missing \"prompt\"");
}

Test(core_error, long_message_truncated_not_overflowed)
{
    char big[2000];

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    core_error_set(EVOLVE_ERROR, "%s", big);
    cr_assert_lt(strlen(evolve_error_last()->message), 512);
}

static void *other_thread(void *arg)
{
    (void)arg;
    core_error_set(EVOLVE_EBUSY, "other thread");
    return NULL;
}

Test(core_error, last_error_is_per_thread)
{
    pthread_t t;

    core_error_set(EVOLVE_ENOTFOUND, "mine");
    cr_assert_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, NULL);
    cr_assert_eq(evolve_error_last()->code, EVOLVE_ENOTFOUND);
    cr_assert_str_eq(evolve_error_last()->message, "mine");
}

Test(core_error, strerror_covers_every_code)
{
    cr_assert_str_eq(evolve_strerror(EVOLVE_OK), "success");
    cr_assert_str_eq(evolve_strerror(EVOLVE_ENOMEM), "out of memory");
    cr_assert_str_eq(evolve_strerror(EVOLVE_EUSER), "a user callback returned an error");
    cr_assert_str_eq(evolve_strerror(12345), "unknown error");
}

Test(core_error, oom_message_is_static)
{
    cr_assert_eq(core_error_oom(), EVOLVE_ENOMEM);
    cr_assert_str_eq(evolve_error_last()->message, "out of memory");
}

Test(core_log, redacts_headers_and_keys)
{
    char s[] = "Authorization: Bearer abcdef123456 X-API-Key: e2b_0123456789abcdef ok";
    char k[] = "{\"apiKey\":\"sk-ant-0123456789\",\"token_count\":5}";

    core_log_redact(s, strlen(s));
    cr_assert_null(strstr(s, "abcdef123456"), "%s", s);
    cr_assert_null(strstr(s, "0123456789abcdef"), "%s", s);
    cr_assert_not_null(strstr(s, " ok"));
    core_log_redact(k, strlen(k));
    cr_assert_null(strstr(k, "0123456789"), "%s", k);
    cr_assert_not_null(strstr(k, "token_count\":5"), "%s", k);
}

Test(core_log, redacts_bare_provider_keys)
{
    char s[] = "using key sk-proj-ABCDEFGHIJKLMNOP for run";

    core_log_redact(s, strlen(s));
    cr_assert_null(strstr(s, "ABCDEFGHIJKLMNOP"), "%s", s);
    cr_assert_not_null(strstr(s, "for run"));
}
