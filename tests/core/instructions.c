/* The instruction file: seed 002's filesystem instructions, then system prompt, then schema. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/instructions.h"

TestSuite(core_instructions, .timeout = 10);

Test(core_instructions, default_only)
{
    char *s;

    cr_assert_eq(core_instructions_build(&s, "/home/user/workspace", NULL, NULL), 0);
    cr_assert_eq(
        strncmp(s,
                "## FILESYSTEM INSTRUCTIONS\n\nYou are running in a sandbox environment.\n\n"
                "Present working directory: /home/user/workspace/\n",
                strlen("## FILESYSTEM INSTRUCTIONS\n\nYou are running in a sandbox "
                       "environment.\n\nPresent working directory: /home/user/workspace/\n")),
        0, "%s", s);
    cr_assert_not_null(
        strstr(s, "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 output/    # Final deliverables\n"));
    cr_assert_not_null(
        strstr(s, "## OUTPUT RESULTS (DELIVERABLES) MUST BE SAVED to `output/` as files."));
    cr_assert_null(strstr(s, "SYSTEM PROMPT"));
    cr_assert_null(strstr(s, "STRUCTURED OUTPUT"));
    free(s);
}

Test(core_instructions, system_prompt_then_schema_in_order)
{
    json_t *schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "units",
                               "type", "integer", "required", "units");
    char *s, *fs, *sp, *so;

    cr_assert_eq(core_instructions_build(&s, "/work/", "Be terse.\nNo emoji.", schema), 0);
    fs = strstr(s, "## FILESYSTEM INSTRUCTIONS");
    sp = strstr(s, "\n\n\n## SYSTEM PROMPT\n\nBe terse.\nNo emoji.");
    so = strstr(
        s, "\n\n\n## STRUCTURED OUTPUT\n\nYour final result MUST be saved to `output/result.json`");
    cr_assert(fs && sp && so && fs < sp && sp < so, "%s", s);
    cr_assert_not_null(strstr(s, "Present working directory: /work/\n"));
    cr_assert_not_null(
        strstr(s, "```json\n{\n  \"type\": \"object\",\n  \"properties\": {\n    \"units\": {\n"
                  "      \"type\": \"integer\"\n    }\n  },\n  \"required\": [\n    \"units\"\n  "
                  "]\n}\n```"),
        "%s", s);
    cr_assert_not_null(strstr(s, "### Never just state results as text."));
    free(s);
    json_decref(schema);
}
