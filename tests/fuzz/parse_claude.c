/* libFuzzer target: arbitrary bytes as the stdout of a claude run, split into lines and fed to
 * the claude parser. Every event must serialise to JSON; nothing may crash, hang or leak
 * (ASan/UBSan/LSan). Built by `make fuzz` (clang, -DEVOLVE_FUZZ=ON). */
#include <stdint.h>
#include <stdlib.h>

#include "harness/harness.h"
#include "harness/lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_event(void *payload, evolve_update_type_t type, json_t *ev)
{
    char *s = json_dumps(ev, JSON_COMPACT);

    (void)payload;
    (void)type;
    if (!s)
        abort(); /* an event that cannot be serialised is a bug */
    free(s);
    json_decref(ev);
}

static int feed(void *arg, const char *line, size_t len)
{
    return hns_parser_feed(arg, line, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hns_parser *p;
    struct hns_lines split;

    if (hns_parser_new(&p, "claude", on_event, NULL) < 0)
        abort();
    hns_lines_init(&split);
    hns_lines_feed(&split, (const char *)data, size, feed, p);
    hns_lines_finish(&split, feed, p);
    hns_parser_finish(p);
    hns_lines_dispose(&split);
    hns_parser_free(p);
    return 0;
}
