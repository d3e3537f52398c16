/* storage/storage.h — the checkpoint store's internals (DESIGN.md §7, docs/internals/storage.md).
 * Ownership: every _new/_load result is the caller's and is released by the matching _free; byte
 * buffers returned through `**out` are malloc'd and freed with free(). Strings passed in are
 * borrowed for the call.
 * Threads: a struct sto_store may be used by one thread at a time; different handles (also in
 * different processes) may work on one store directory at once (see store.c for the locking). All
 * other functions here are reentrant. */
#ifndef EVOLVE_STORAGE_INTERNAL_H
#define EVOLVE_STORAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "evolve/storage.h"

/* ---- SHA-256 (sha256.c, OpenSSL EVP) ----------------------------------------------------------
 */
#define STO_HASH_LEN 32
#define STO_HEX_LEN  64
struct sto_sha256;
int sto_sha256_new(struct sto_sha256 **out);
int sto_sha256_update(struct sto_sha256 *h, const void *data, size_t len);
/* Writes 64 lowercase hex digits and a NUL into hex (65 bytes) and resets the context. */
int sto_sha256_final_hex(struct sto_sha256 *h, char hex[STO_HEX_LEN + 1]);
void sto_sha256_free(struct sto_sha256 *h);
/* One-shot digest of data as hex. */
int sto_sha256_hex(char hex[STO_HEX_LEN + 1], const void *data, size_t len);
/* True when s is exactly 64 lowercase hex digits. */
bool sto_is_hex_id(const char *s);

/* ---- content-defined chunking (chunker.c) -----------------------------------------------------
 */
/* Chunk sizes are part of the archive format: chunks are deflated independently, so moving a
 * boundary changes the archive bytes. Never change these without bumping the manifest version. */
#define STO_CHUNK_MIN      4096u
#define STO_CHUNK_AVG_BITS 14 /* 16 KiB average */
#define STO_CHUNK_MAX      65536u
/* Length of the first chunk of data[0..len). When `final` is false and no boundary is found
 * before len, returns 0 (more data needed); with `final`, returns min(len, STO_CHUNK_MAX). */
size_t sto_chunk_next(const unsigned char *data, size_t len, bool final);
/* The same rule with smaller chunks (1 KiB min, 4 KiB average, 16 KiB max) for manifests, so a
 * changed line costs about 4 KiB of new manifest, not 16. */
size_t sto_chunk_next_small(const unsigned char *data, size_t len, bool final);

/* ---- blobs (blob.c): the stored form of one chunk ---------------------------------------------
 * Layout: "EVB1", u32le raw length, u32le crc32(raw), u32le deflated length, then a raw deflate
 * stream (level 6, ended by a sync flush, never final) that can be spliced into a gzip member. */
#define STO_BLOB_HDR 16
struct sto_blob_info {
    uint32_t raw_len;
    uint32_t crc;
    uint32_t comp_len;
};
/* Deflates data into a malloc'd blob. */
int sto_blob_encode(unsigned char **out, size_t *out_len, const void *data, size_t len);
/* Parses the header of a blob of blob_len bytes; EVOLVE_ECORRUPT naming `id` when malformed. */
int sto_blob_header(struct sto_blob_info *info, const unsigned char *blob, size_t blob_len,
                    const char *id);
/* Inflates a blob into a malloc'd buffer and checks its length, CRC and SHA-256 == id.
 * EVOLVE_ECORRUPT naming the blob on any mismatch. */
int sto_blob_decode(unsigned char **out, size_t *out_len, const unsigned char *blob,
                    size_t blob_len, const char *id);

/* ---- key/value backend (backend_local.c) ------------------------------------------------------
 * Keys are '/'-separated relative names ("blobs/ab/<64 hex>", "index/<id>.json"); a backend maps
 * them to its own storage, so an S3-compatible backend can implement the same operations. */
#define STO_PUT_NOSYNC 1u /* caller calls sync() before relying on durability */
struct sto_backend;
struct sto_backend_ops {
    unsigned int version;
    const char *name;
    /* Atomically creates or replaces key: readers see the old value or the whole new one. */
    int (*put)(struct sto_backend *b, const char *key, const void *data, size_t len,
               unsigned int flags);
    /* Reads the whole value; EVOLVE_ENOTFOUND when absent. */
    int (*get)(struct sto_backend *b, const char *key, unsigned char **out, size_t *out_len);
    /* 1 when present, 0 when absent, <0 on error. */
    int (*exists)(struct sto_backend *b, const char *key);
    /* Calls cb for each key starting with prefix (any order); cb returning <0 stops the walk. */
    int (*list)(struct sto_backend *b, const char *prefix,
                int (*cb)(void *payload, const char *key, uint64_t size), void *payload);
    int (*del)(struct sto_backend *b, const char *key);
    /* Makes every earlier NOSYNC put durable. */
    int (*sync)(struct sto_backend *b);
    /* Drops NOSYNC puts not yet synced (their checkpoint failed). */
    void (*discard)(struct sto_backend *b);
    void (*free)(struct sto_backend *b);
};
struct sto_backend {
    const struct sto_backend_ops *ops;
};
#define STO_BACKEND_OPS_VERSION 1
int sto_backend_local_new(struct sto_backend **out, const char *root);
/* Turns off every fsync/syncfs of a local backend (tests, benchmarks). */
void sto_backend_local_set_nosync(struct sto_backend *b, bool nosync);
/* The directory of a local backend (for locks and temp files); NULL for others. */
const char *sto_backend_local_root(struct sto_backend *b);

/* ---- path safety and globs (pathsafe.c) ------------------------------------------------------ */
/* Normalises an archive path in place (drops "./" parts, repeated and trailing '/') and checks
 * it: non-empty, relative, no ".." component. EVOLVE_EUNSAFE naming `what` and the path. */
int sto_path_clean(char *path, const char *what);
/* Symlink `link` (archive path) with `target`, checked against all symlinks of the archive
 * (links[i] -> targets[i], n of them): the target, resolved through those links, must stay
 * inside the root. EVOLVE_EUNSAFE naming the link otherwise. */
int sto_symlink_check(const char *link, const char *target, char *const *links,
                      char *const *targets, size_t n);
/* True when `path` is matched by glob `pat` (reference semantics: "**" / "**\/" / "*" / "?",
 * anything else literal, anchored). */
bool sto_glob_match(const char *pat, const char *path);

/* ---- manifests (manifest.c) ------------------------------------------------------------------ */
enum sto_type { STO_FILE = 'f', STO_DIR = 'd', STO_LINK = 'l' };
struct sto_entry {
    char *path;                      /* relative to the sandbox home, no trailing '/' */
    char type;                       /* enum sto_type */
    uint32_t mode;                   /* permission bits only (07777) */
    int64_t mtime;                   /* seconds */
    uint64_t size;                   /* files: content length */
    char *target;                    /* symlinks */
    char (*chunks)[STO_HEX_LEN + 1]; /* files: chunk ids in order */
    size_t nchunks;
};
struct sto_manifest {
    struct sto_entry *entries; /* sorted by path (bytewise) */
    size_t count;
};
void sto_manifest_free(struct sto_manifest *m);
/* Walks `home` and collects the checkpointed dirs of `agent` plus workspace_dir (see agents.c),
 * minus the excludes. Entries are sorted; files have no chunks yet. */
int sto_manifest_scan(struct sto_manifest *m, const char *home, const char *agent,
                      const char *workspace_dir);
/* Deterministic text form (one JSON object per line) and its parser; the parser checks every
 * path and symlink (EVOLVE_ECORRUPT / EVOLVE_EUNSAFE naming `what`). */
int sto_manifest_serialize(const struct sto_manifest *m, char **out, size_t *out_len);
int sto_manifest_parse(struct sto_manifest *m, const char *text, size_t len, const char *what);

/* ---- agents (agents.c) ----------------------------------------------------------------------- */
/* The state dirs of an agent (NULL-terminated) and its excluded paths; EVOLVE_EINVAL for an
 * unknown agent ("Unknown agent type: x"). */
int sto_agent_dirs(const char *agent, const char *const **dirs, const char *const **excludes);
/* True when a path (relative to home) is excluded from checkpoints. */
bool sto_excluded(const char *path, const char *workspace_dir, const char *const *agent_excl);

/* ---- a set of strings with a one-byte value (set.c) ------------------------------------------ */
struct sto_set;
int sto_set_new(struct sto_set **out);
/* Adds key (copied) with value v; an existing key keeps its first value. 1 if added, 0 if it
 * was there, EVOLVE_ENOMEM. */
int sto_set_add(struct sto_set *s, const char *key, char v);
/* The value of key, or 0 when absent. */
char sto_set_get(const struct sto_set *s, const char *key);
size_t sto_set_count(const struct sto_set *s);
void sto_set_free(struct sto_set *s);

/* ---- the store (store.c) --------------------------------------------------------------------- */
struct sto_store {
    struct sto_backend *be;
    char *root;
    int lock_fd;
    unsigned int threads;
    bool nosync;
};
/* A checkpoint record: the public info plus the manifest's chunk ids. */
struct sto_record {
    evolve_checkpoint_info_t *info;
    char (*manifest)[STO_HEX_LEN + 1];
    size_t nmanifest;
    int64_t created_ns;
};
void sto_record_free(struct sto_record *r);
int sto_store_open(struct sto_store **out, const char *root, unsigned int threads);
void sto_store_free(struct sto_store *st);
/* Shared lock for checkpoint writers, exclusive for gc (flock on <root>/lock). */
int sto_store_lock(struct sto_store *st, bool exclusive);
void sto_store_unlock(struct sto_store *st);
int sto_blob_key(char *key, size_t size, const char *id);
/* Reads and decodes a blob (verified). */
int sto_blob_read(struct sto_store *st, const char *id, unsigned char **out, size_t *out_len);
/* Writes the index record (the commit point of a checkpoint). */
int sto_record_write(struct sto_store *st, const struct sto_record *r);
/* Loads a record by id or "latest" (EVOLVE_ENOTFOUND: "Checkpoint <id> not found" /
 * "No checkpoints found"). */
int sto_record_load(struct sto_store *st, const char *id_or_latest, struct sto_record *r);
/* All records, newest first (unreadable ones skipped, as the reference does). */
int sto_record_list(struct sto_store *st, struct sto_record **out, size_t *count);
void sto_record_list_free(struct sto_record *list, size_t count);
/* Reads the manifest of a record (chunks verified, paths checked). */
int sto_manifest_load(struct sto_store *st, const struct sto_record *r, struct sto_manifest *m);
/* Stores bytes (a manifest) as small chunks; ids are appended to *ids (realloc'd). */
int sto_store_bytes(struct sto_store *st, const unsigned char *data, size_t len,
                    char (**ids)[STO_HEX_LEN + 1], size_t *nids);

/* ---- deterministic archives (archive_gen.c) -------------------------------------------------- */
/* Returns the stored (deflated) form of a chunk; the callee owns nothing after it returns. */
typedef int (*sto_blob_fetch_fn)(void *payload, const char *id, unsigned char **blob,
                                 size_t *blob_len);
struct sto_archive_gen;
int sto_archive_gen_new(struct sto_archive_gen **out, const struct sto_manifest *m,
                        sto_blob_fetch_fn fetch, void *payload);
/* Next piece of the tar.gz: *data valid until the next call; *len == 0 at the end. */
int sto_archive_gen_next(struct sto_archive_gen *g, const unsigned char **data, size_t *len);
void sto_archive_gen_free(struct sto_archive_gen *g);
/* Runs a generator to the end, hashing: hex digest and total size. */
int sto_archive_hash(const struct sto_manifest *m, sto_blob_fetch_fn fetch, void *payload,
                     char hex[STO_HEX_LEN + 1], uint64_t *size);
/* Fetches from the store (verifying each blob's header only; the archive hash covers the rest). */
int sto_store_fetch(void *store, const char *id, unsigned char **blob, size_t *blob_len);

/* ---- safe extraction (extract.c) ------------------------------------------------------------- */
/* Reads a tar(.gz) from `read(payload, &buf) -> bytes` (0 at end, <0 error). */
typedef ssize_t (*sto_read_fn)(void *payload, const void **buf);
/* Checks every entry of the archive without writing anything: types (regular, dir, symlink,
 * hard link to an earlier regular file), paths, symlink targets, names through symlinks. */
int sto_extract_scan(sto_read_fn rd, void *payload);
/* Extracts into the directory dest (created if missing); assumes a clean scan and checks each
 * entry again. Never follows a symlink while writing. */
int sto_extract_run(sto_read_fn rd, void *payload, const char *dest);
/* Scan then extract a tar.gz file. Nothing is written when the scan refuses the archive. */
int sto_extract_file(const char *archive, const char *dest);
/* Writes one file at dest/rel (parents created, no symlink followed). */
int sto_write_under(int destfd, const char *rel, const void *data, size_t len, uint32_t mode);

/* ---- operations (checkpoint.c, restore.c, maint.c) ------------------------------------------- */
int sto_checkpoint(struct sto_store *st, const char *home, const evolve_checkpoint_options_t *o,
                   struct sto_record *out);
int sto_restore(struct sto_store *st, const char *id_or_latest, const char *dest,
                struct sto_record *out);
int sto_download(struct sto_store *st, const char *id_or_latest, const char *to, bool extract,
                 char **path_out);
int sto_download_files(struct sto_store *st, const char *id_or_latest, const char *const *files,
                       size_t nfiles, const char *const *globs, size_t nglobs, const char *to,
                       evolve_file_t **out, size_t *count);
int sto_verify(struct sto_store *st, evolve_store_report_t *rep, evolve_store_damage_cb cb,
               void *payload);
int sto_gc(struct sto_store *st, evolve_store_report_t *rep);

/* ---- info helpers (info.c) ------------------------------------------------------------------- */
void sto_info_free(evolve_checkpoint_info_t *info);
int sto_info_dup(evolve_checkpoint_info_t **out, const evolve_checkpoint_info_t *in);

#endif
