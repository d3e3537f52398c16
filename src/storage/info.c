/* info.c — evolve_checkpoint_info_t: allocation, copying, and the reference's CheckpointInfo JSON
 * (field order and names of seed 002; absent optional fields omitted). Owns: info memory.
 * Threads: any. */
#include "storage/storage.h"
#include "storage/info.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void sto_info_free(evolve_checkpoint_info_t *info)
{
    if (!info)
        return;
    free((char *)info->id);
    free((char *)info->hash);
    free((char *)info->tag);
    free((char *)info->timestamp);
    free((char *)info->agent_type);
    free((char *)info->model);
    free((char *)info->workspace_mode);
    free((char *)info->parent_id);
    free((char *)info->comment);
    free(info);
}

static int dup_str(const char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

int sto_info_new(evolve_checkpoint_info_t **out, const char *id, const char *hash, const char *tag,
                 const char *timestamp, int64_t size, const char *agent, const char *model,
                 const char *mode, const char *parent, const char *comment)
{
    evolve_checkpoint_info_t *i = calloc(1, sizeof(*i));

    if (!i)
        return core_error_oom();
    i->version = EVOLVE_CHECKPOINT_INFO_VERSION;
    i->size_bytes = size;
    if (dup_str(&i->id, id) || dup_str(&i->hash, hash) || dup_str(&i->tag, tag ? tag : "") ||
        dup_str(&i->timestamp, timestamp) || dup_str(&i->agent_type, agent) ||
        dup_str(&i->model, model) || dup_str(&i->workspace_mode, mode) ||
        dup_str(&i->parent_id, parent) || dup_str(&i->comment, comment)) {
        sto_info_free(i);
        return core_error_oom();
    }
    *out = i;
    return 0;
}

int sto_info_dup(evolve_checkpoint_info_t **out, const evolve_checkpoint_info_t *in)
{
    return sto_info_new(out, in->id, in->hash, in->tag, in->timestamp, in->size_bytes,
                        in->agent_type, in->model, in->workspace_mode, in->parent_id, in->comment);
}

json_t *sto_info_to_json(const evolve_checkpoint_info_t *i)
{
    json_t *o = json_object();
    int bad = 0;

    if (!o)
        return NULL;
    bad |= json_object_set_new(o, "id", json_string(i->id));
    bad |= json_object_set_new(o, "hash", json_string(i->hash));
    bad |= json_object_set_new(o, "tag", json_string(i->tag ? i->tag : ""));
    bad |= json_object_set_new(o, "timestamp", json_string(i->timestamp));
    if (i->size_bytes >= 0)
        bad |= json_object_set_new(o, "sizeBytes", json_integer((json_int_t)i->size_bytes));
    if (i->agent_type)
        bad |= json_object_set_new(o, "agentType", json_string(i->agent_type));
    if (i->model)
        bad |= json_object_set_new(o, "model", json_string(i->model));
    if (i->workspace_mode)
        bad |= json_object_set_new(o, "workspaceMode", json_string(i->workspace_mode));
    if (i->parent_id)
        bad |= json_object_set_new(o, "parentId", json_string(i->parent_id));
    if (i->comment)
        bad |= json_object_set_new(o, "comment", json_string(i->comment));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int sto_info_from_json(evolve_checkpoint_info_t **out, json_t *o, const char *what)
{
    const char *id = NULL, *hash = NULL, *tag = NULL, *ts = NULL, *agent = NULL, *model = NULL,
               *mode = NULL, *parent = NULL, *comment = NULL;
    json_int_t size = -1;

    if (json_unpack(o, "{s:s,s:s,s:s,s:s,s?I,s?s,s?s,s?s,s?s,s?s}", "id", &id, "hash", &hash, "tag",
                    &tag, "timestamp", &ts, "sizeBytes", &size, "agentType", &agent, "model",
                    &model, "workspaceMode", &mode, "parentId", &parent, "comment", &comment) < 0)
        return core_error_set(EVOLVE_ECORRUPT, "%s: not a CheckpointInfo", what);
    return sto_info_new(out, id, hash, tag, ts, (int64_t)size, agent, model, mode, parent, comment);
}
