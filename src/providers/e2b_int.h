/* providers/e2b_int.h — internals shared by src/providers/e2b*.c. */
#ifndef EVOLVE_PROVIDERS_E2B_INT_H
#define EVOLVE_PROVIDERS_E2B_INT_H

#include <jansson.h>
#include <stdatomic.h>

#include "providers/cloud.h"
#include "providers/e2b.h"

#define E2B_ENVD_PORT 49983

/* The provider. Reference-counted: the embedder's reference (dropped by ops->free) and one per
 * request in flight, so completions arriving after free still find it. */
struct e2b_prov {
    struct prov base; /* first (R15) */
    atomic_int refs;
    struct io_reactor *r;
    char *api_url, *sandbox_url, *domain, *template_id;
    char *hdr_key; /* "X-API-Key: ..." */
    unsigned timeout_s, keepalive_s;
};

/* What reaching one sandbox's envd takes. Reference-counted: the box and each stream. */
struct e2b_sbx {
    atomic_int refs;
    char id[64];
    char *envd_url;  /* base URL (shared host) */
    char *hdr_token; /* "X-Access-Token: ..." or NULL */
    char *hdr_id;    /* "E2b-Sandbox-Id: <id>" */
    char *domain;
};

struct e2b_box {
    struct prov_box base; /* first (R15) */
    struct e2b_sbx *sbx;
};

/* One op in flight: who to tell, and what it carries. */
struct e2b_op {
    struct e2b_prov *p;
    struct e2b_sbx *sbx; /* referenced, or NULL */
    prov_done_cb done;
    void *payload;
    int kind;
    void *ctx;      /* the op's own state (list paging) */
    char what[160]; /* "e2b create", "e2b read_file /home/user/x" */
};

void e2b_prov_ref(struct e2b_prov *p);
void e2b_prov_unref(struct e2b_prov *p);
void e2b_sbx_ref(struct e2b_sbx *s);
void e2b_sbx_unref(struct e2b_sbx *s);

/* A new op holding references; NULL on OOM (error set). */
struct e2b_op *e2b_op_new(struct e2b_prov *p, struct e2b_sbx *sbx, prov_done_cb done, void *payload,
                          int kind, const char *what);
/* Frees an op without calling done. */
void e2b_op_free(struct e2b_op *op);
/* Calls done(payload, st, result) and frees the op. @thread reactor */
void e2b_op_finish(struct e2b_op *op, const struct prov_status *st, void *result);

/* Fills h[] with the envd headers (auth, routing, user) and returns the count (<= 5). */
size_t e2b_envd_headers(const struct e2b_sbx *s, const char **h);

/* POSTs a Connect unary call `path` ("/process.Process/SendSignal") with JSON `req` (stolen).
 * fn gets the reply; Connect errors are mapped by e2b_connect_status. @thread any */
int e2b_unary(struct e2b_op *op, const char *path, json_t *req, cloud_reply_fn fn);

/* Status of a Connect unary reply: 0 for a 200, else the Connect error's code mapped to an
 * EVOLVE_E* (not_found ENOTFOUND, already_exists EEXISTS, ...) with the message. */
int e2b_connect_status(struct prov_status *st, const struct cloud_reply *rep, const char *what);
/* A Connect error code name to EVOLVE_E*. */
int e2b_connect_code(const char *code);

/* A control-plane call: `path` below the API URL, JSON `body` (stolen, may be NULL); fn gets
 * the reply with payload = op. @thread any */
int e2b_api_call(struct e2b_op *op, const char *method, const char *path, json_t *body,
                 cloud_reply_fn fn, bool idempotent);

/* Ops of e2b_exec.c, e2b_files.c and e2b_list.c. */
int e2b_list(struct prov *p, prov_done_cb done, void *payload);
int e2b_get_host(struct prov_box *box, unsigned int port, prov_done_cb done, void *payload);
int e2b_exec(struct prov_box *box, const struct prov_exec_spec *spec, prov_done_cb done,
             void *payload);
int e2b_signal(struct prov_box *box, uint32_t proc_id, int signo, prov_done_cb done, void *payload);
int e2b_write_file(struct prov_box *box, const char *path, const void *data, size_t len,
                   prov_done_cb done, void *payload);
int e2b_read_file(struct prov_box *box, const char *path, prov_done_cb done, void *payload);
int e2b_list_dir(struct prov_box *box, const char *path, prov_done_cb done, void *payload);
/* Makes the workspace directories of a fresh sandbox, then finishes `op` with `box`. */
void e2b_layout_workspace(struct e2b_op *op, struct e2b_box *box);

#endif
