/* tree.h — building and comparing small directory trees in tests (storage round trips). */
#ifndef EVOLVE_TEST_TREE_H
#define EVOLVE_TEST_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Each dies on failure. Paths are root + "/" + rel; parents are created. */
void tt_file(const char *root, const char *rel, const char *content, mode_t mode);
void tt_bytes(const char *root, const char *rel, const void *data, size_t len);
void tt_link(const char *root, const char *rel, const char *target);
void tt_dir(const char *root, const char *rel, mode_t mode);
/* Sets a file's mtime (seconds) without following symlinks. */
void tt_mtime(const char *root, const char *rel, int64_t sec);

/* 0 when trees a and b hold the same entries (types, permission bits, contents, symlink
 * targets, file mtimes); otherwise 1 with the first difference in why. */
int tt_compare(const char *a, const char *b, char *why, size_t why_size);

/* Number of entries directly in dir (0 when it is missing). */
size_t tt_count(const char *dir);

/* Sum of st_size of the regular files below dir. */
uint64_t tt_bytes_under(const char *dir);

#endif
