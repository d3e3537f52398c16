/* core/rawjson.h — the JSON text of a raw stdout/stderr event, written in one pass.
 * Ownership: the returned buffer is the caller's (free()). Threads: any. */
#ifndef EVOLVE_CORE_RAWJSON_H
#define EVOLVE_CORE_RAWJSON_H

#include <stddef.h>

/* {"stream":STREAM,"data":DATA} exactly as json_dumps(JSON_COMPACT) writes it; DATA that is not
 * UTF-8 becomes "(non-UTF-8 output)". `stream` must need no escaping. NUL-terminated; the length
 * (without the NUL) goes to *out_len. NULL only on OOM. */
char *core_raw_event_json(const char *stream, const char *data, size_t len, size_t *out_len);

#endif
