/* parse_autohand.c — libFuzzer target for the Autohand harness parser and typed decoder.
 * Each input is split on LF and fed line by line; every non-blank line must yield one event
 * (lossless; a message with a thought yields two) and the typed decoder must agree with the parser
 * on unknown vs typed. The input is also used as a permission request id. ASan/UBSan catch memory
 * and UB errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "harness/autohand.h"
#include "harness/harness.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
    size_t events;
    evolve_update_type_t last;
};

static void count(void *payload, evolve_update_type_t type, json_t *event)
{
    struct sink *s = payload;

    s->events++;
    s->last = type;
    json_decref(event);
}

static int blank(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!strchr(" \t\r\n\v\f", s[i]) || !s[i])
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct hns_parser *p = NULL;
    struct sink s = {0, EVOLVE_UPDATE_TYPE_COUNT};
    size_t start = 0;
    char *id, *reply = NULL;

    if (hns_parser_new(&p, "autohand", count, &s) < 0)
        abort();
    while (start <= size) {
        const char *nl = memchr(text + start, '\n', size - start);
        size_t len = nl ? (size_t)(nl - (text + start)) : size - start;
        size_t before = s.events;
        struct hns_autohand_hook h;

        if (hns_parser_feed(p, text + start, len) < 0)
            abort(); /* only OOM may fail */
        if (!blank(text + start, len)) {
            if (s.events == before || s.events > before + 2)
                abort(); /* lossless: one event per line (two for a message with a thought) */
            if (hns_autohand_decode(&h, text + start, len) < 0)
                abort();
            if ((h.kind == HNS_AUTOHAND_UNKNOWN) != (s.last == EVOLVE_UPDATE_UNKNOWN))
                abort();
            hns_autohand_dispose(&h);
        }
        if (!nl)
            break;
        start += len + 1;
    }
    hns_parser_finish(p);
    hns_parser_free(p);

    id = malloc(size + 1);
    if (!id)
        return 0;
    memcpy(id, data, size);
    id[size] = '\0';
    if (evolve_autohand_permission_reply(&reply, id, (evolve_permission_decision_t)(size % 6)) == 0)
        evolve_autohand_reply_free(reply);
    free(id);
    return 0;
}
