/* core/stage.h — remote sandbox trees staged through a local directory (stage.c). */
#ifndef EVOLVE_CORE_STAGE_H
#define EVOLVE_CORE_STAGE_H

struct sess;
struct prov_done_msg;

/* Called on the session actor when the transfer ended: rc 0, or an error with its message. */
typedef void (*sess_stage_done_fn)(struct sess *s, int rc, const char *err, const char *staging,
                                   void *ctx);

/* Downloads workspace/ and the agent's state dirs (minus the checkpoint excludes) into
 * `staging`, keeping modes and mtimes. Returns 0 (then `then` runs later) or an error. */
int sess_stage_download(struct sess *s, const char *staging, sess_stage_done_fn then, void *ctx);

/* Writes every regular file under `staging` into the sandbox at the same relative path.
 * Returns 0 (then `then` runs, possibly before this returns) or an error. */
int sess_stage_upload(struct sess *s, const char *staging, sess_stage_done_fn then, void *ctx);

/* Completion of a STEP_STAGE_* provider op. */
void sess_stage_prov_done(struct sess *s, struct prov_done_msg *m);

/* rm -rf of a staging directory (never follows symlinks). */
void sess_stage_remove(const char *dir);

#endif
