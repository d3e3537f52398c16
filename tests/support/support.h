/* support.h — helpers shared by the Criterion tests: temp dirs, files, deadlines. */
#ifndef EVOLVE_TEST_SUPPORT_H
#define EVOLVE_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* Prints the message on stderr and aborts: the test fails loudly. Works with and without
 * Criterion (tests/concurrency runs without it). */
void ts_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Monotonic milliseconds. */
uint64_t ts_now_ms(void);

/* Creates a fresh directory under $TMPDIR (or /tmp) named evolve-test-<tag>-XXXXXX and writes
 * its path into out. Dies on failure. */
void ts_mkdtemp(char *out, size_t size, const char *tag);

/* rm -rf of a directory the test created (refuses "/" and empty paths). */
void ts_rmtree(const char *path);

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL on failure. */
char *ts_read_file(const char *path, size_t *len_out);

/* Writes `len` bytes to `path`, creating parent directories. Dies on failure. */
void ts_write_file(const char *path, const char *data, size_t len);

/* Path of a file under tests/data. Returns a static buffer per call site's use. */
const char *ts_data_path(char *out, size_t size, const char *rel);

#endif
