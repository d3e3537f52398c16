/* storage/info.h — CheckpointInfo <-> JSON (info.c). Threads: any. */
#ifndef EVOLVE_STORAGE_INFO_H
#define EVOLVE_STORAGE_INFO_H

#include <jansson.h>

#include "evolve/storage.h"

/* A new info with copies of the strings (tag NULL -> ""). */
int sto_info_new(evolve_checkpoint_info_t **out, const char *id, const char *hash, const char *tag,
                 const char *timestamp, int64_t size, const char *agent, const char *model,
                 const char *mode, const char *parent, const char *comment);
/* The reference's CheckpointInfo object; NULL on OOM. */
json_t *sto_info_to_json(const evolve_checkpoint_info_t *info);
/* Parses the CheckpointInfo fields of o (extra fields ignored); EVOLVE_ECORRUPT naming what. */
int sto_info_from_json(evolve_checkpoint_info_t **out, json_t *o, const char *what);

#endif
