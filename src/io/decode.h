/* io/decode.h — incremental stream decoders: LF-separated lines, text/event-stream (SSE) events,
 * and Connect-protocol streaming envelopes. Pure: no I/O, no threads, no global state. Each is
 * fed arbitrary chunks (a chunk may end anywhere, even inside a CRLF or an envelope header) and
 * produces exactly what feeding the whole stream at once would.
 *
 * Callbacks return 0 to go on or a negative EVOLVE_E* code to stop; feed then returns that code
 * unchanged and the decoder must not be fed again (dispose it). Pointers handed to callbacks are
 * borrowed for the call only.
 * Ownership: decoders are embedded structs (_init/_dispose); they own their buffers.
 * Threads: a decoder is used by one thread at a time; no locking. */
#ifndef EVOLVE_IO_DECODE_H
#define EVOLVE_IO_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- lines ----------------------------------------------------------------------------------- */

/* line excludes its LF (a CR before it is kept: the caller decides). */
typedef int (*io_line_fn)(const char *line, size_t len, void *payload);

struct io_lines {
    char *buf; /* the partial last line */
    size_t len, cap, max;
    uint64_t lineno; /* lines completed so far */
    bool skipping;   /* inside a line that exceeded max: dropping to its LF */
};

/* max_line: longest line accepted in bytes, 0 = 1 MiB. @thread any */
void io_lines_init(struct io_lines *l, size_t max_line);
void io_lines_dispose(struct io_lines *l);

/* Splits data on LF and calls fn for each complete line; keeps the partial last line. A line
 * longer than max_line is dropped whole and reported once: feed returns EVOLVE_EINVAL ("line N
 * exceeds M bytes") but stays usable — the next line is delivered normally.
 * @return 0, EVOLVE_EINVAL (over-long line), EVOLVE_ENOMEM, or fn's negative code. */
int io_lines_feed(struct io_lines *l, const char *data, size_t len, io_line_fn fn, void *payload);

/* End of stream: delivers a partial last line (one without a final LF), if any. */
int io_lines_finish(struct io_lines *l, io_line_fn fn, void *payload);

/* ---- server-sent events (WHATWG HTML, "event stream interpretation") ------------------------- */

struct io_sse_event {
    const char *event; /* the "event" field, "message" when absent */
    const char *data;  /* data lines joined with LF, NUL-terminated */
    size_t data_len;
    const char *id;   /* the last event id seen in the stream ("" when none) */
    int64_t retry_ms; /* the last valid "retry" value seen in the stream, -1 when none */
};

typedef int (*io_sse_fn)(const struct io_sse_event *ev, void *payload);

struct io_sse {
    char *line; /* the partial current line */
    size_t line_len, line_cap;
    char *data, *event, *id;
    size_t data_len, data_cap, event_len, id_len;
    size_t max; /* cap on one line and on one event's data */
    int64_t retry_ms;
    bool after_cr;  /* the previous chunk ended with CR: a leading LF belongs to it */
    bool started;   /* a possible leading BOM has been handled */
    bool has_event; /* an "event" field was seen for the event being built */
};

/* max_bytes: cap on one line and on one event's data, 0 = 4 MiB. @thread any */
void io_sse_init(struct io_sse *d, size_t max_bytes);
void io_sse_dispose(struct io_sse *d);

/* Lines end with CRLF, LF or CR; a blank line dispatches the event being built (not when its
 * data is empty, as the spec says); ':' lines are comments; unknown fields are ignored.
 * @return 0, EVOLVE_EINVAL (line or event larger than max_bytes), EVOLVE_ENOMEM, or fn's code. */
int io_sse_feed(struct io_sse *d, const char *data, size_t len, io_sse_fn fn, void *payload);

/* End of stream: an event not terminated by a blank line is discarded (spec behaviour). */
void io_sse_finish(struct io_sse *d);

/* ---- Connect protocol streaming envelopes ---------------------------------------------------- */

#define IO_CONNECT_FLAG_COMPRESSED 0x01
#define IO_CONNECT_FLAG_END_STREAM 0x02

struct io_connect_msg {
    uint8_t flags;
    const char *data; /* the message bytes (for end-of-stream: its JSON) */
    size_t len;
    bool end_stream;
    /* End-of-stream only: the "error" object's code and message, NULL when there is none. */
    const char *error_code;
    const char *error_message;
};

typedef int (*io_connect_fn)(const struct io_connect_msg *msg, void *payload);

struct io_connect {
    uint8_t hdr[5];
    size_t hdr_have;
    char *buf;
    size_t need, have, cap, max;
    bool ended; /* an end-of-stream message was delivered */
};

/* max_message: largest message accepted, 0 = 16 MiB. @thread any */
void io_connect_init(struct io_connect *d, size_t max_message);
void io_connect_dispose(struct io_connect *d);

/* Envelopes: 1 flag byte, 4-byte big-endian length, then the message. Delivers each message
 * whole. @return 0, EVOLVE_EUNSUPPORTED (compressed flag), EVOLVE_EINVAL (message too large),
 * EVOLVE_EPROTO (bytes after end-of-stream, end-of-stream JSON not an object), EVOLVE_ENOMEM, or
 * fn's code. */
int io_connect_feed(struct io_connect *d, const char *data, size_t len, io_connect_fn fn,
                    void *payload);

/* End of the body. @return 0 after a complete end-of-stream message, else EVOLVE_EPROTO
 * (stream cut inside an envelope, or no end-of-stream message). */
int io_connect_finish(struct io_connect *d);

/* Writes the 5-byte envelope header for a message of len bytes into out. @thread any */
void io_connect_header(uint8_t out[5], uint8_t flags, uint32_t len);

#endif
