/* providers/daytona_int.h — internals shared by src/providers/daytona*.c. */
#ifndef EVOLVE_PROVIDERS_DAYTONA_INT_H
#define EVOLVE_PROVIDERS_DAYTONA_INT_H

#include <jansson.h>
#include <stdatomic.h>

#include "providers/cloud.h"
#include "providers/daytona.h"

struct dt_exec;

/* Reference-counted like struct e2b_prov: the embedder's reference and one per request. */
struct dt_prov {
    struct prov base; /* first (R15) */
    atomic_int refs;
    struct io_reactor *r;
    char *api_url, *snapshot;
    char *hdr_auth; /* "Authorization: Bearer ..." */
    unsigned poll_ms, autostop_min, poll_timeout_ms;
    atomic_uint next_cmd;  /* command ids (prov_proc.id) */
    char sid_prefix[24];   /* per provider instance: session ids never collide */
    struct dt_exec *execs; /* live commands, for signal (reactor thread only) */
};

/* What reaching one sandbox's toolbox takes; shared by the box and its commands. */
struct dt_sbx {
    atomic_int refs;
    char id[64];
    char *toolbox; /* "<toolboxProxyUrl>/<id>" */
};

struct dt_box {
    struct prov_box base; /* first (R15) */
    struct dt_sbx *sbx;
};

struct dt_op {
    struct dt_prov *p;
    struct dt_sbx *sbx;
    prov_done_cb done;
    void *payload;
    int kind;
    void *ctx;
    int polls;
    uint64_t poll_delay;
    char what[160];
};

void dt_prov_ref(struct dt_prov *p);
void dt_prov_unref(struct dt_prov *p);
void dt_sbx_ref(struct dt_sbx *s);
void dt_sbx_unref(struct dt_sbx *s);
struct dt_op *dt_op_new(struct dt_prov *p, struct dt_sbx *s, prov_done_cb done, void *payload,
                        int kind, const char *what);
void dt_op_free(struct dt_op *op);
void dt_op_finish(struct dt_op *op, const struct prov_status *st, void *result);

/* A toolbox call: `path` below the sandbox's toolbox URL. body may be NULL; ctype NULL = JSON.
 * @thread any */
int dt_toolbox(struct dt_op *op, const char *method, const char *path, const void *body, size_t len,
               const char *ctype, uint32_t timeout_ms, cloud_reply_fn fn);
/* True for a 2xx reply. */
bool dt_ok(const struct cloud_reply *rep);

/* An API call: `path` below the API URL, JSON `body` (stolen, may be NULL). @thread any */
int dt_api(struct dt_op *op, const char *method, const char *path, json_t *body, bool idempotent,
           cloud_reply_fn fn);
/* This process's labels as a JSON object (new reference). */
json_t *dt_labels(void);

int dt_list(struct prov *p, prov_done_cb done, void *payload);
int dt_get_host(struct prov_box *box, unsigned int port, prov_done_cb done, void *payload);
int dt_write_file(struct prov_box *box, const char *path, const void *data, size_t len,
                  prov_done_cb done, void *payload);
int dt_read_file(struct prov_box *box, const char *path, prov_done_cb done, void *payload);
int dt_list_dir(struct prov_box *box, const char *path, prov_done_cb done, void *payload);
int dt_exec(struct prov_box *box, const struct prov_exec_spec *spec, prov_done_cb done,
            void *payload);
int dt_signal(struct prov_box *box, uint32_t proc_id, int signo, prov_done_cb done, void *payload);

#endif
