/* parse.c — `evolve parse --agent NAME [FILE|-] [--summary]`: runs a recorded agent stream
 * through the agent's parser and prints one OutputEvent JSON per line, or a summary (counts per
 * update type; usage totals with the last call usage per messageId summed and run totals kept
 * apart). Exit 0 even when lines were unknown; 1 on I/O errors; 2 on bad usage.
 * Threads: the main thread only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "evolve/evolve.h"
#include "harness/harness.h"
#include "harness/lines.h"

struct totals {
    double prompt, completion, cached, cost;
    int has_prompt, has_completion, has_cached, has_cost;
    size_t count;
};

struct parse_ctx {
    bool summary;
    bool out_error; /* writing stdout failed */
    size_t lines, events;
    size_t counts[EVOLVE_UPDATE_TYPE_COUNT];
    json_t *last_call;       /* messageId -> usage object (the last one seen) */
    struct totals call_anon; /* call usage without a messageId: each one counts */
    struct totals run;
    struct hns_parser *parser;
};

static void add_usage(struct totals *t, const json_t *u)
{
    json_t *v;

    t->count++;
    if ((v = json_object_get(u, "promptTokens")) && json_is_number(v))
        t->prompt += json_number_value(v), t->has_prompt = 1;
    if ((v = json_object_get(u, "completionTokens")) && json_is_number(v))
        t->completion += json_number_value(v), t->has_completion = 1;
    if ((v = json_object_get(u, "cachedTokens")) && json_is_number(v))
        t->cached += json_number_value(v), t->has_cached = 1;
    if ((v = json_object_get(u, "costUsd")) && json_is_number(v))
        t->cost += json_number_value(v), t->has_cost = 1;
}

static void on_event(void *payload, evolve_update_type_t type, json_t *ev)
{
    struct parse_ctx *c = payload;

    c->events++;
    if (type < EVOLVE_UPDATE_TYPE_COUNT)
        c->counts[type]++;
    if (c->summary) {
        json_t *up = json_object_get(ev, "update");
        const char *scope = json_string_value(json_object_get(up, "scope"));
        json_t *usage = json_object_get(up, "usage");
        const char *mid = json_string_value(json_object_get(ev, "messageId"));

        if (type == EVOLVE_UPDATE_USAGE && scope && !strcmp(scope, "run"))
            add_usage(&c->run, usage);
        else if (type == EVOLVE_UPDATE_USAGE && mid)
            json_object_set(c->last_call, mid, usage); /* the last per message wins */
        else if (type == EVOLVE_UPDATE_USAGE)
            add_usage(&c->call_anon, usage);
    } else if (json_dumpf(ev, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF) {
        c->out_error = true;
    }
    json_decref(ev);
}

static int on_line(void *arg, const char *line, size_t len)
{
    struct parse_ctx *c = arg;

    c->lines++;
    return hns_parser_feed(c->parser, line, len);
}

static json_t *totals_json(const struct totals *t)
{
    json_t *o = json_object();

    json_object_set_new(o, "updates", json_integer((json_int_t)t->count));
    if (t->has_prompt)
        json_object_set_new(o, "promptTokens", json_integer((json_int_t)t->prompt));
    if (t->has_completion)
        json_object_set_new(o, "completionTokens", json_integer((json_int_t)t->completion));
    if (t->has_cached)
        json_object_set_new(o, "cachedTokens", json_integer((json_int_t)t->cached));
    if (t->has_cost)
        json_object_set_new(o, "costUsd", json_real(t->cost));
    return o;
}

static void print_summary(struct parse_ctx *c, const char *agent, const char *name)
{
    json_t *out = json_object(), *types = json_object(), *usage = json_object();
    struct totals calls = c->call_anon;
    const char *key;
    json_t *u;
    int t;

    json_object_foreach(c->last_call, key, u) add_usage(&calls, u);
    for (t = 0; t < EVOLVE_UPDATE_TYPE_COUNT; t++)
        if (c->counts[t])
            json_object_set_new(types, evolve_update_type_name((evolve_update_type_t)t),
                                json_integer((json_int_t)c->counts[t]));
    json_object_set_new(usage, "call", totals_json(&calls));
    json_object_set_new(usage, "run", totals_json(&c->run));
    json_object_set_new(out, "agent", json_string(agent));
    json_object_set_new(out, "input", json_string(name));
    json_object_set_new(out, "lines", json_integer((json_int_t)c->lines));
    json_object_set_new(out, "events", json_integer((json_int_t)c->events));
    json_object_set_new(out, "updates", types);
    json_object_set_new(out, "usage", usage);
    if (json_dumpf(out, stdout, JSON_INDENT(2)) < 0 || fputc('\n', stdout) == EOF)
        c->out_error = true;
    json_decref(out);
}

static void parse_usage(FILE *to)
{
    fprintf(to, "usage: evolve parse --agent NAME [FILE|-] [--summary]\n\n"
                "Reads a recorded agent stdout stream (a file, or stdin for '-' or no FILE) and\n"
                "prints one OutputEvent JSON per line, or with --summary the counts per update\n"
                "type and the usage totals.\n");
}

int cli_parse_main(int argc, char **argv)
{
    const char *agent = NULL, *path = NULL;
    struct parse_ctx c = {0};
    struct hns_lines split;
    static char chunk[65536];
    int fd = 0, i, rc = 0, status = 0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--agent") && i + 1 < argc) {
            agent = argv[++i];
        } else if (!strncmp(argv[i], "--agent=", 8)) {
            agent = argv[i] + 8;
        } else if (!strcmp(argv[i], "--summary")) {
            c.summary = true;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            parse_usage(stdout);
            return 0;
        } else if (!path && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
            path = argv[i];
        } else {
            parse_usage(stderr);
            return 2;
        }
    }
    if (!agent) {
        parse_usage(stderr);
        return 2;
    }
    c.last_call = json_object();
    if (!c.last_call)
        return cli_fail("parse", "out of memory");
    if (hns_parser_new(&c.parser, agent, on_event, &c) < 0) {
        json_decref(c.last_call);
        cli_fail("parse", NULL);
        return 2;
    }
    if (path && strcmp(path, "-") && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        status = cli_fail("parse", "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    if (!path || !strcmp(path, "-"))
        path = "-";
    hns_lines_init(&split);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            status = cli_fail("parse", "cannot read %s: %s", !strcmp(path, "-") ? "stdin" : path,
                              strerror(errno));
            break;
        }
        if (n == 0) {
            rc = hns_lines_finish(&split, on_line, &c);
            if (rc >= 0)
                rc = hns_parser_finish(c.parser);
            break;
        }
        if ((rc = hns_lines_feed(&split, chunk, (size_t)n, on_line, &c)) < 0)
            break;
        if (c.out_error)
            break;
    }
    hns_lines_dispose(&split);
    if (rc < 0 && !status)
        status = cli_fail("parse", "%s: %s", path, evolve_error_last()->message);
    if (!status && c.summary)
        print_summary(&c, agent, path);
    if (!status && (c.out_error || fflush(stdout) == EOF))
        status = cli_fail("parse", "cannot write stdout: %s", strerror(errno));
    if (fd > 0)
        close(fd);
out:
    hns_parser_free(c.parser);
    json_decref(c.last_call);
    return status;
}
