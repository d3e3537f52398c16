/* instructions.c — text of the instruction file evolve writes into every workspace.
 * Owns: the seed 002 templates, verbatim. Threads: any. */
#include "core/instructions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char filesystem_template[] =
    "## FILESYSTEM INSTRUCTIONS\n"
    "\n"
    "You are running in a sandbox environment.\n"
    "\n"
    "Present working directory: %s/\n"
    "\n"
    "IMPORTANT - Directory structure:\n"
    "%s/\n"
    "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 context/   # Input files (read-only) provided by the "
    "user\n"
    "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 scripts/   # Your code goes here\n"
    "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 temp/      # Scratch space\n"
    "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 output/    # Final deliverables\n"
    "\n"
    "## OUTPUT RESULTS (DELIVERABLES) MUST BE SAVED to `output/` as files.";

static const char schema_template[] =
    "## STRUCTURED OUTPUT\n"
    "\n"
    "Your final result MUST be saved to `output/result.json` following this schema:\n"
    "\n"
    "```json\n"
    "%s\n"
    "```\n"
    "\n"
    "You are free to:\n"
    "- Reason through the problem step by step\n"
    "- Read and analyze context files\n"
    "- Use any available tools\n"
    "- Process incrementally\n"
    "- Create intermediate files in `temp/` or `scripts/`\n"
    "\n"
    "But your final `output/result.json` MUST conform to the schema above.\n"
    "\n"
    "### OUTPUT RESULTS (DELIVERABLES) MUST BE WRITTEN to `output/result.json` as files.\n"
    "### Never just state results as text.";

/* Appends `tmpl` to a growing buffer with each "%s" replaced by the next of `args` (templates
 * hold no other '%'); returns 0 or ENOMEM. Done by hand so the templates stay literal text. */
static int append(char **buf, size_t *len, const char *tmpl, const char *const *args)
{
    size_t need = strlen(tmpl) + 1, i;
    const char *p;
    char *nb, *w;

    for (i = 0; args[i]; i++)
        need += strlen(args[i]);
    nb = realloc(*buf, *len + need);
    if (!nb)
        return core_error_oom();
    *buf = nb;
    w = nb + *len;
    for (p = tmpl, i = 0; *p; p++) {
        if (p[0] == '%' && p[1] == 's' && args[i]) {
            size_t n = strlen(args[i]);
            memcpy(w, args[i++], n);
            w += n;
            p++;
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
    *len = (size_t)(w - nb);
    return 0;
}

int core_instructions_build(char **out, const char *workdir, const char *system_prompt,
                            const json_t *schema)
{
    char wd[1024], *buf = NULL, *pretty = NULL;
    size_t len = 0, n;
    int rc;

    /* The template adds the trailing slash itself. */
    snprintf(wd, sizeof(wd), "%s", workdir ? workdir : "/home/user/workspace");
    n = strlen(wd);
    while (n > 1 && wd[n - 1] == '/')
        wd[--n] = '\0';
    rc = append(&buf, &len, filesystem_template, (const char *const[]){wd, wd, NULL});
    if (rc == 0 && system_prompt && *system_prompt)
        rc = append(&buf, &len, "\n\n\n## SYSTEM PROMPT\n\n%s",
                    (const char *const[]){system_prompt, NULL});
    if (rc == 0 && schema) {
        pretty = json_dumps(schema, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        rc = pretty ? append(&buf, &len, "\n\n\n", (const char *const[]){NULL}) : core_error_oom();
        if (rc == 0)
            rc = append(&buf, &len, schema_template, (const char *const[]){pretty, NULL});
    }
    free(pretty);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    return 0;
}
