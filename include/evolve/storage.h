/* evolve/storage.h — checkpoints: snapshots of a sandbox home (its workspace and the agent's state
 * dirs) in a local content-addressed store, with lineage, listing, download and safe restore.
 * Ownership: a handle or struct returned through `out` is the caller's and is released by the
 * free function named in its doc; strings passed in are copied or used only during the call.
 * Threads: one evolve_store_t is used by one thread at a time. Any number of handles, in any
 * number of threads and processes, may use the same store directory at once. The calls are
 * synchronous and CPU-heavy (hashing, deflate): run them on a worker, not an event loop. */
#ifndef EVOLVE_STORAGE_H
#define EVOLVE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evolve/common.h"

EVOLVE_BEGIN_DECL

/** An open store (opaque). */
typedef struct evolve_store evolve_store_t;

typedef struct evolve_store_options {
    unsigned int version; /**< EVOLVE_STORE_OPTIONS_VERSION */
    const char *root;     /**< store directory; NULL = $EVOLVE_HOME/store (~/.evolve/store) */
    unsigned int threads; /**< hashing/deflate threads for a checkpoint; 0 = online CPUs (<= 8) */
    bool no_sync;         /**< skip fsync/syncfs (tests, benchmarks); crash safety is lost */
} evolve_store_options_t;
#define EVOLVE_STORE_OPTIONS_VERSION 1
#define EVOLVE_STORE_OPTIONS_INIT                                                                  \
    {                                                                                              \
        .version = EVOLVE_STORE_OPTIONS_VERSION                                                    \
    }

/** A checkpoint, field for field the reference's CheckpointInfo (seed 002). Allocated by the
 *  library (free with evolve_checkpoint_info_free()); `version` tells which fields exist, fields
 *  are only ever appended. Absent optional strings are NULL, an absent size is -1. */
typedef struct evolve_checkpoint_info {
    unsigned int version;       /**< EVOLVE_CHECKPOINT_INFO_VERSION at the time of the build */
    const char *id;             /**< "ckpt_<base36 ms>_<8 base36>" */
    const char *hash;           /**< SHA-256 (hex) of the tar.gz archive */
    const char *tag;            /**< session tag at checkpoint time ("" when none) */
    const char *timestamp;      /**< ISO 8601, "2026-01-02T03:04:05.678Z" */
    int64_t size_bytes;         /**< archive size in bytes */
    const char *agent_type;     /**< "claude", "codex", ... */
    const char *model;          /**< may be NULL */
    const char *workspace_mode; /**< "knowledge" | "swe"; may be NULL */
    const char *parent_id;      /**< lineage; NULL for a first checkpoint */
    const char *comment;        /**< may be NULL */
} evolve_checkpoint_info_t;
#define EVOLVE_CHECKPOINT_INFO_VERSION 1

/** What to record with a new checkpoint. Only agent_type is required. */
typedef struct evolve_checkpoint_options {
    unsigned int version;       /**< EVOLVE_CHECKPOINT_OPTIONS_VERSION */
    const char *agent_type;     /**< selects the state dirs archived with the workspace */
    const char *model;          /**< NULL: absent */
    const char *workspace_mode; /**< NULL: absent */
    const char *parent_id;      /**< NULL: no parent */
    const char *comment;        /**< NULL: absent */
    const char *tag;            /**< NULL: "" */
    const char *workspace_dir;  /**< relative to home; NULL: "workspace" */
} evolve_checkpoint_options_t;
#define EVOLVE_CHECKPOINT_OPTIONS_VERSION 1
#define EVOLVE_CHECKPOINT_OPTIONS_INIT                                                             \
    {                                                                                              \
        .version = EVOLVE_CHECKPOINT_OPTIONS_VERSION                                               \
    }

/** One file of a checkpoint: path relative to the sandbox home, and its bytes. */
typedef struct evolve_file {
    char *path;
    unsigned char *data;
    size_t len;
} evolve_file_t;

/** Counts from verify and gc. */
typedef struct evolve_store_report {
    unsigned int version; /**< set by the library: EVOLVE_STORE_REPORT_VERSION */
    size_t checkpoints;   /**< index records seen */
    size_t blobs;         /**< blobs seen */
    size_t damaged;       /**< verify: problems reported through the callback */
    size_t unreferenced;  /**< blobs no checkpoint references (gc: removed) */
    uint64_t bytes;       /**< verify: bytes of all blobs; gc: bytes removed */
} evolve_store_report_t;
#define EVOLVE_STORE_REPORT_VERSION 1

/** Receives one problem found by verify: `what` is a checkpoint id or a blob key. */
typedef void (*evolve_store_damage_cb)(void *payload, const char *what, const char *message);

/** Opens (creating if needed) a store. `opts` may be NULL.
 *  @return 0, EVOLVE_EINVAL (bad options or no home) or EVOLVE_EIO.
 *  @thread any */
EVOLVE_API int evolve_store_open(evolve_store_t **out, const evolve_store_options_t *opts);
/** Closes a store. NULL is a no-op. */
EVOLVE_API void evolve_store_free(evolve_store_t *store);

/** Checkpoints the sandbox home directory `home`: `<workspace_dir>/` and the agent's state dirs
 *  (a missing one is skipped), minus the reference's excludes. `out` may be NULL.
 *  @return 0, EVOLVE_EINVAL (unknown agent, bad options), EVOLVE_ENOTFOUND (no home) or
 *  EVOLVE_EIO. @thread any */
EVOLVE_API int evolve_store_checkpoint(evolve_checkpoint_info_t **out, evolve_store_t *store,
                                       const char *home, const evolve_checkpoint_options_t *opts);

/** Restores checkpoint `id` (or "latest") into `dest`, which must be missing or an empty
 *  directory. The archive is rebuilt and its SHA-256 checked before anything is extracted;
 *  nothing appears in dest unless the whole restore succeeds. `out` (may be NULL) receives the
 *  checkpoint's info (agent type, workspace mode) for the caller's checks.
 *  @return 0, EVOLVE_ENOTFOUND, EVOLVE_ECORRUPT (integrity check failed), EVOLVE_EUNSAFE,
 *  EVOLVE_EEXISTS (dest not empty) or EVOLVE_EIO. @thread any */
EVOLVE_API int evolve_store_restore(evolve_checkpoint_info_t **out, evolve_store_t *store,
                                    const char *id, const char *dest);

/** Lists checkpoints newest first. limit <= 0 means 100, more than 500 means 500; the tag filter
 *  (NULL: none) applies before the limit. Free with evolve_checkpoint_list_free().
 *  @return 0 or EVOLVE_EIO. @thread any */
EVOLVE_API int evolve_store_list(evolve_checkpoint_info_t ***out, size_t *count,
                                 evolve_store_t *store, int limit, const char *tag);
/** One checkpoint by id or "latest" (globally newest). Free with evolve_checkpoint_info_free().
 *  @return 0 or EVOLVE_ENOTFOUND ("Checkpoint <id> not found" / "No checkpoints found"). */
EVOLVE_API int evolve_store_get(evolve_checkpoint_info_t **out, evolve_store_t *store,
                                const char *id);
/** Writes the checkpoint into directory `to` (NULL: cwd): extracted when `extract`, else as
 *  `<to>/checkpoint-<id>.tar.gz`. `path_out` (may be NULL) receives `to` or the archive path,
 *  malloc'd. Extraction refuses unsafe archives before writing anything.
 *  @return 0, EVOLVE_ENOTFOUND, EVOLVE_ECORRUPT, EVOLVE_EUNSAFE or EVOLVE_EIO. */
EVOLVE_API int evolve_store_download(char **path_out, evolve_store_t *store, const char *id,
                                     const char *to, bool extract);
/** Reads regular files of a checkpoint without building the archive: `files` (exact paths,
 *  precedence) or `globs` (any matches) or, with neither, all. Each file's content is verified
 *  against its chunk hashes. With `to`, the files are also written under it. `out` receives
 *  an array of `count` files sorted by path; free with evolve_files_free().
 *  @return 0, EVOLVE_ENOTFOUND, EVOLVE_ECORRUPT, EVOLVE_EUNSAFE ("Unsafe file path requested")
 *  or EVOLVE_EIO. */
EVOLVE_API int evolve_store_download_files(evolve_file_t **out, size_t *count,
                                           evolve_store_t *store, const char *id,
                                           const char *const *files, size_t nfiles,
                                           const char *const *globs, size_t nglobs, const char *to);
/** Re-hashes every blob and rebuilds every checkpoint's archive against its recorded hash.
 *  Each problem goes to `cb` (may be NULL) and is counted in out->damaged.
 *  @return 0 when clean, EVOLVE_ECORRUPT when damage was found, or EVOLVE_EIO. */
EVOLVE_API int evolve_store_verify(evolve_store_report_t *out, evolve_store_t *store,
                                   evolve_store_damage_cb cb, void *payload);
/** Removes blobs no checkpoint references and stale temp files. Waits for running checkpoints
 *  (they hold the store lock shared; gc takes it exclusive). @return 0 or EVOLVE_EIO. */
EVOLVE_API int evolve_store_gc(evolve_store_report_t *out, evolve_store_t *store);

/** The info as the reference's JSON object (2-space indented when `pretty`), malloc'd. */
EVOLVE_API char *evolve_checkpoint_info_to_json(const evolve_checkpoint_info_t *info, bool pretty);
/** Frees one info. NULL is a no-op. */
EVOLVE_API void evolve_checkpoint_info_free(evolve_checkpoint_info_t *info);
/** Frees a list from evolve_store_list(). */
EVOLVE_API void evolve_checkpoint_list_free(evolve_checkpoint_info_t **list, size_t count);
/** Frees files from evolve_store_download_files(). */
EVOLVE_API void evolve_files_free(evolve_file_t *files, size_t count);

EVOLVE_END_DECL

#endif
