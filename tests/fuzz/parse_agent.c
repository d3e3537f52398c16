/* parse_agent.c — one libFuzzer target per agent (built as fuzz_parse_<agent> with
 * -DFUZZ_AGENT="<agent>"): arbitrary bytes as the agent's stdout, split by the production line
 * splitter and fed to one parser instance. Every event must serialise, both as JSON and through
 * the JS-compatible stringify; nothing may crash, hang or leak (ASan/UBSan/LSan).
 * autohand has its own target (parse_autohand.c): it also cross-checks the typed decoder. */
#include <stdint.h>
#include <stdlib.h>

#include "harness/harness.h"
#include "harness/lines.h"

#ifndef FUZZ_AGENT
#error "build with -DFUZZ_AGENT=\"<agent>\""
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sink(void *payload, evolve_update_type_t type, json_t *event)
{
    char *text = json_dumps(event, JSON_COMPACT);
    char *js = hns_js_stringify(event);

    (void)payload;
    if (!text || !js || type >= EVOLVE_UPDATE_TYPE_COUNT)
        abort(); /* an event that cannot be serialised is a bug */
    free(text);
    free(js);
    json_decref(event);
}

static int feed(void *arg, const char *line, size_t len)
{
    return hns_parser_feed(arg, line, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hns_parser *p;
    struct hns_lines split;

    if (hns_parser_new(&p, FUZZ_AGENT, sink, NULL) < 0)
        abort();
    hns_lines_init(&split);
    hns_lines_feed(&split, (const char *)data, size, feed, p);
    hns_lines_finish(&split, feed, p);
    if (hns_parser_finish(p) < 0)
        abort();
    hns_lines_dispose(&split);
    hns_parser_free(p);
    return 0;
}
