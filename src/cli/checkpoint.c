/* checkpoint.c — `evolve checkpoint ...`: create, list, show, download, files, restore, verify and
 * gc over the local store (include/evolve/storage.h). Flags only; the work is in the library.
 * Threads: the CLI's main thread. */
#include "cli/cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"

#define MAXV 64

struct args {
    const char *sub, *id, *store, *home, *agent, *model, *comment, *tag, *parent, *mode, *to,
        *workspace;
    const char *files[MAXV], *globs[MAXV];
    size_t nfiles, nglobs;
    int limit;
    bool json, no_extract;
};

static void usage(FILE *to)
{
    fputs("usage: evolve checkpoint <command> [--store DIR] [--json]\n"
          "  create --home DIR --agent A [--model M] [--comment C] [--tag T] [--parent ID]\n"
          "         [--workspace-mode M] [--workspace DIR]\n"
          "  list [--limit N] [--tag T]\n"
          "  show ID|latest\n"
          "  download ID|latest [--to DIR] [--no-extract]\n"
          "  files ID|latest [--file PATH]... [--glob PATTERN]... [--to DIR]\n"
          "  restore ID|latest --to EMPTY_DIR\n"
          "  verify\n"
          "  gc\n"
          "The store is DIR, else $EVOLVE_HOME/store (default ~/.evolve/store).\n",
          to);
}

static int parse(struct args *a, int argc, char **argv)
{
    int i;

    memset(a, 0, sizeof(*a));
    if (argc < 2)
        return -1;
    a->sub = argv[1];
    for (i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = NULL;
        if (!strcmp(f, "--json")) {
            a->json = true;
            continue;
        }
        if (!strcmp(f, "--no-extract")) {
            a->no_extract = true;
            continue;
        }
        if (f[0] != '-' && !a->id) {
            a->id = f;
            continue;
        }
        if (!strcmp(f, "--store"))
            slot = &a->store;
        else if (!strcmp(f, "--home"))
            slot = &a->home;
        else if (!strcmp(f, "--agent"))
            slot = &a->agent;
        else if (!strcmp(f, "--model"))
            slot = &a->model;
        else if (!strcmp(f, "--comment"))
            slot = &a->comment;
        else if (!strcmp(f, "--tag"))
            slot = &a->tag;
        else if (!strcmp(f, "--parent"))
            slot = &a->parent;
        else if (!strcmp(f, "--workspace-mode"))
            slot = &a->mode;
        else if (!strcmp(f, "--workspace"))
            slot = &a->workspace;
        else if (!strcmp(f, "--to"))
            slot = &a->to;
        else if (!strcmp(f, "--file") && a->nfiles < MAXV)
            slot = &a->files[a->nfiles++];
        else if (!strcmp(f, "--glob") && a->nglobs < MAXV)
            slot = &a->globs[a->nglobs++];
        else if (!strcmp(f, "--limit") && v) {
            char *end;
            long l = strtol(v, &end, 10);
            if (*end || end == v)
                return cli_fail("checkpoint", "--limit wants a number, got '%s'", v) ? -2 : -2;
            a->limit = (int)(l > 100000 ? 100000 : l < -1 ? -1 : l);
            i++;
            continue;
        } else {
            cli_fail("checkpoint", "unknown or repeated argument '%s'", f);
            return -2;
        }
        if (!v) {
            cli_fail("checkpoint", "%s needs a value", f);
            return -2;
        }
        *slot = v;
        i++;
    }
    return 0;
}

static void print_info(const evolve_checkpoint_info_t *i, bool json)
{
    char *s;

    if (json) {
        s = evolve_checkpoint_info_to_json(i, true);
        if (s)
            puts(s);
        free(s);
        return;
    }
    printf("%s  %s  %s  %s  %lld bytes", i->id, i->timestamp, i->agent_type ? i->agent_type : "-",
           i->tag && *i->tag ? i->tag : "-", (long long)i->size_bytes);
    if (i->parent_id)
        printf("  parent %s", i->parent_id);
    if (i->comment)
        printf("  \"%s\"", i->comment);
    putchar('\n');
}

static void on_damage(void *payload, const char *what, const char *message)
{
    json_t *arr = payload;

    if (arr)
        json_array_append_new(arr, json_pack("{s:s,s:s}", "what", what, "message", message));
    else
        fprintf(stderr, "damage: %s: %s\n", what, message);
}

static int run_list(evolve_store_t *st, const struct args *a)
{
    evolve_checkpoint_info_t **list = NULL;
    size_t n = 0, i;

    if (evolve_store_list(&list, &n, st, a->limit, a->tag) < 0)
        return cli_fail("checkpoint", NULL);
    if (a->json) {
        json_t *arr = json_array();
        char *s;
        for (i = 0; i < n; i++) {
            char *one = evolve_checkpoint_info_to_json(list[i], false);
            json_array_append_new(arr, one ? json_loads(one, 0, NULL) : json_null());
            free(one);
        }
        s = json_dumps(arr, JSON_INDENT(2));
        puts(s ? s : "[]");
        free(s);
        json_decref(arr);
    } else {
        for (i = 0; i < n; i++)
            print_info(list[i], false);
    }
    evolve_checkpoint_list_free(list, n);
    return 0;
}

static int run_files(evolve_store_t *st, const struct args *a)
{
    evolve_file_t *files = NULL;
    size_t n = 0, i;
    json_t *arr = a->json ? json_array() : NULL;

    if (evolve_store_download_files(&files, &n, st, a->id, a->files, a->nfiles, a->globs, a->nglobs,
                                    a->to) < 0)
        return cli_fail("checkpoint", NULL);
    for (i = 0; i < n; i++) {
        if (arr)
            json_array_append_new(arr, json_pack("{s:s,s:I}", "path", files[i].path, "sizeBytes",
                                                 (json_int_t)files[i].len));
        else
            printf("%s\t%zu\n", files[i].path, files[i].len);
    }
    if (arr) {
        char *s = json_dumps(arr, JSON_INDENT(2));
        puts(s ? s : "[]");
        free(s);
        json_decref(arr);
    }
    evolve_files_free(files, n);
    return 0;
}

static int run_maint(evolve_store_t *st, const struct args *a, bool gc)
{
    evolve_store_report_t rep;
    json_t *damage = a->json ? json_array() : NULL;
    int rc = gc ? evolve_store_gc(&rep, st) : evolve_store_verify(&rep, st, on_damage, damage);

    if (rc < 0 && rc != EVOLVE_ECORRUPT) {
        json_decref(damage);
        return cli_fail("checkpoint", NULL);
    }
    if (a->json) {
        json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "result", rc < 0 ? "damaged" : "ok",
                              "checkpoints", (json_int_t)rep.checkpoints, "blobs",
                              (json_int_t)rep.blobs, gc ? "removed" : "unreferenced",
                              (json_int_t)rep.unreferenced, gc ? "bytesRemoved" : "bytes",
                              (json_int_t)rep.bytes, "damaged", (json_int_t)rep.damaged);
        char *s;
        if (!gc)
            json_object_set(o, "problems", damage);
        s = json_dumps(o, JSON_INDENT(2));
        puts(s ? s : "{}");
        free(s);
        json_decref(o);
    } else if (gc) {
        printf("gc: %zu checkpoints, %zu blobs, removed %zu blobs (%llu bytes)\n", rep.checkpoints,
               rep.blobs, rep.unreferenced, (unsigned long long)rep.bytes);
    } else {
        printf("verify: %zu checkpoints, %zu blobs (%llu bytes), %zu unreferenced, %zu problems\n",
               rep.checkpoints, rep.blobs, (unsigned long long)rep.bytes, rep.unreferenced,
               rep.damaged);
    }
    json_decref(damage);
    return rc < 0 ? 1 : 0;
}

int cli_checkpoint_main(int argc, char **argv)
{
    evolve_store_options_t so = EVOLVE_STORE_OPTIONS_INIT;
    evolve_checkpoint_info_t *info = NULL;
    evolve_store_t *st = NULL;
    struct args a;
    int rc = parse(&a, argc, argv), ret = 0;
    char *path = NULL;

    if (rc == -2)
        return 2;
    if (rc < 0 || !strcmp(a.sub, "--help") || !strcmp(a.sub, "-h")) {
        usage(rc < 0 ? stderr : stdout);
        return rc < 0 ? 2 : 0;
    }
    if (!strcmp(a.sub, "show") || !strcmp(a.sub, "download") || !strcmp(a.sub, "files") ||
        !strcmp(a.sub, "restore")) {
        if (!a.id)
            return cli_fail("checkpoint", "%s needs a checkpoint id or 'latest'", a.sub) + 1;
    }
    so.root = a.store;
    if (evolve_store_open(&st, &so) < 0)
        return cli_fail("checkpoint", NULL);
    if (!strcmp(a.sub, "create")) {
        evolve_checkpoint_options_t co = EVOLVE_CHECKPOINT_OPTIONS_INIT;
        if (!a.home || !a.agent) {
            ret = cli_fail("checkpoint", "create needs --home DIR and --agent A") + 1;
        } else {
            co.agent_type = a.agent;
            co.model = a.model;
            co.comment = a.comment;
            co.tag = a.tag;
            co.parent_id = a.parent;
            co.workspace_mode = a.mode;
            co.workspace_dir = a.workspace;
            if (evolve_store_checkpoint(&info, st, a.home, &co) < 0)
                ret = cli_fail("checkpoint", NULL);
            else
                print_info(info, a.json);
        }
    } else if (!strcmp(a.sub, "list")) {
        ret = run_list(st, &a);
    } else if (!strcmp(a.sub, "show")) {
        if (evolve_store_get(&info, st, a.id) < 0)
            ret = cli_fail("checkpoint", NULL);
        else
            print_info(info, a.json);
    } else if (!strcmp(a.sub, "download")) {
        if (evolve_store_download(&path, st, a.id, a.to, !a.no_extract) < 0)
            ret = cli_fail("checkpoint", NULL);
        else if (a.json)
            printf("{\n  \"path\": \"%s\"\n}\n", path);
        else
            puts(path);
    } else if (!strcmp(a.sub, "files")) {
        ret = run_files(st, &a);
    } else if (!strcmp(a.sub, "restore")) {
        if (!a.to)
            ret = cli_fail("checkpoint", "restore needs --to EMPTY_DIR") + 1;
        else if (evolve_store_restore(&info, st, a.id, a.to) < 0)
            ret = cli_fail("checkpoint", NULL);
        else
            print_info(info, a.json);
    } else if (!strcmp(a.sub, "verify") || !strcmp(a.sub, "gc")) {
        ret = run_maint(st, &a, !strcmp(a.sub, "gc"));
    } else {
        usage(stderr);
        ret = 2;
    }
    free(path);
    evolve_checkpoint_info_free(info);
    evolve_store_free(st);
    return ret;
}
