/* harness/lines.h — splits a byte stream (stdout chunks of any size) into LF-terminated lines,
 * as the reference's run loop does: a line's LF is removed, a final line without LF is
 * delivered by hns_lines_finish. Lines wholly inside a chunk are passed without copying; only
 * a line split across chunks is buffered. Ownership: the splitter owns its buffer; a line
 * handed to the callback is borrowed for the call. Threads: one thread at a time. */
#ifndef EVOLVE_HARNESS_LINES_H
#define EVOLVE_HARNESS_LINES_H

#include <stddef.h>

/* Receives one line (without LF). A negative return stops the feed and is returned. */
typedef int (*hns_line_fn)(void *arg, const char *line, size_t len);

struct hns_lines {
    char *buf; /* the pending partial line */
    size_t len, cap;
};

void hns_lines_init(struct hns_lines *s);
void hns_lines_dispose(struct hns_lines *s);

/* Feeds `n` bytes; calls fn for every line completed by them. 0, fn's error, or
 * EVOLVE_ENOMEM. */
int hns_lines_feed(struct hns_lines *s, const char *chunk, size_t n, hns_line_fn fn, void *arg);

/* End of stream: delivers a pending last line without LF (if any bytes are pending). */
int hns_lines_finish(struct hns_lines *s, hns_line_fn fn, void *arg);

#endif
