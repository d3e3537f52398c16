/* libFuzzer target: arbitrary bytes as qwen stdout, split on LF, through one parser instance.
 * The parser must never crash, hang or leak, and every event must serialise. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

#define AGENT "qwen"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sink(void *payload, evolve_update_type_t type, json_t *event)
{
    char *text = json_dumps(event, JSON_COMPACT | JSON_ENCODE_ANY);
    char *js = hns_js_stringify(event);

    (void)payload;
    if (!text || !js || type >= EVOLVE_UPDATE_TYPE_COUNT)
        abort();
    free(text);
    free(js);
    json_decref(event);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hns_parser *p;
    size_t start = 0, i;

    if (hns_parser_new(&p, AGENT, sink, NULL) < 0)
        abort();
    for (i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        if (hns_parser_feed(p, (const char *)data + start, i - start) < 0)
            abort();
        start = i + 1;
    }
    if (hns_parser_finish(p) < 0)
        abort();
    hns_parser_free(p);
    return 0;
}
