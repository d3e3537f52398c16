/* hvec.c — whole-file vector checks with stated differences (see hvec.h). */
#include "support/hvec.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "evolve/evolve.h"
#include "support/vectors.h"

size_t hvec_check_file(const char *agent, const char *rel, const struct hvec_diff *diffs)
{
    return hvec_check_file_all(agent, rel, 0, "", diffs);
}

size_t hvec_check_file_all(const char *agent, const char *rel, unsigned all, const char *all_why,
                           const struct hvec_diff *diffs)
{
    json_t *cases = vec_load(rel), *c;
    size_t i, n = 0;

    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const struct hvec_diff *df = NULL, *it;
        json_t *got = vec_run(agent, c), *want;
        char why[4096] = "";

        for (it = diffs; it && it->name; it++)
            if (!strcmp(it->name, name))
                df = it;
        cr_assert_not_null(got, "%s: %s: parser failed: %s", rel, name,
                           evolve_error_last()->message);
        if (df && df->expect) {
            json_error_t err;

            want = json_loads(df->expect, 0, &err);
            cr_assert_not_null(want, "%s: bad replacement expectation: %s", name, err.text);
        } else {
            want = json_incref(json_object_get(c, "expect"));
        }
        cr_expect(vec_match(want, got, all | (df ? df->ignore : 0), why, sizeof(why)),
                  "%s: %s: %s\n  (deliberate differences: %s; %s)", rel, name, why, all_why,
                  df ? df->why : "none for this case");
        json_decref(want);
        json_decref(got);
        n++;
    }
    json_decref(cases);
    return n;
}
