/* core_provider_resolve (seed 002's auto-resolution) and core_runtime_provider's names. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/runtime.h"
#include "evolve/evolve.h"

static void clear(void)
{
    unsetenv("E2B_API_KEY");
    unsetenv("DAYTONA_API_KEY");
    unsetenv("MODAL_TOKEN_ID");
    unsetenv("MODAL_TOKEN_SECRET");
}

TestSuite(core_provider_resolve, .init = clear, .timeout = 20);

Test(core_provider_resolve, e2b_key_wins_over_daytona)
{
    const char *name = NULL;

    setenv("E2B_API_KEY", "e2b_x", 1);
    setenv("DAYTONA_API_KEY", "d", 1);
    cr_assert_eq(core_provider_resolve(&name), 0, "%s", evolve_error_last()->message);
    cr_assert_str_eq(name, "e2b");
}

Test(core_provider_resolve, modal_variables_say_not_supported_before_daytona)
{
    const char *name = NULL;

    setenv("MODAL_TOKEN_ID", "id", 1);
    setenv("MODAL_TOKEN_SECRET", "s", 1);
    setenv("DAYTONA_API_KEY", "d", 1);
    cr_assert_eq(core_provider_resolve(&name), EVOLVE_EUNSUPPORTED);
    cr_assert_not_null(strstr(evolve_error_last()->message, "Modal is not supported yet"));
    cr_assert_null(name);
}

Test(core_provider_resolve, daytona_alone_and_nothing_configured)
{
    const char *name = NULL;

    setenv("DAYTONA_API_KEY", "d", 1);
    cr_assert_eq(core_provider_resolve(&name), 0);
    cr_assert_str_eq(name, "daytona");
    unsetenv("DAYTONA_API_KEY");
    cr_assert_eq(core_provider_resolve(&name), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "No sandbox provider configured"));
}

Test(core_provider_resolve, runtime_builds_cloud_providers_by_name_and_auto)
{
    evolve_runtime_t *rt;
    struct prov *p = NULL, *q = NULL;

    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0);
    cr_assert_eq(core_runtime_provider(&p, rt, "e2b"), EVOLVE_EINVAL, "no key");
    cr_assert_not_null(strstr(evolve_error_last()->message, "E2B_API_KEY"));
    setenv("E2B_API_KEY", "e2b_x", 1);
    cr_assert_eq(core_runtime_provider(&p, rt, "auto"), 0, "%s", evolve_error_last()->message);
    cr_assert_str_eq(p->ops->name, "e2b");
    cr_assert_eq(core_runtime_provider(&q, rt, "e2b"), 0);
    cr_assert_eq(p, q, "one shared instance");
    setenv("DAYTONA_API_KEY", "d", 1);
    cr_assert_eq(core_runtime_provider(&q, rt, "daytona"), 0);
    cr_assert_str_eq(q->ops->name, "daytona");
    cr_assert_eq(core_runtime_provider(&q, rt, "modal"), EVOLVE_EUNSUPPORTED);
    cr_assert_eq(core_runtime_provider(&q, rt, "nope"), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "daytona"));
    evolve_runtime_free(rt);
}
