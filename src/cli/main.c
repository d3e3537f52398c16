/* main.c — the evolve command: global flags and the subcommand table.
 * Everything a subcommand does lives in the library; the CLI only parses flags and prints. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "evolve/evolve.h"

static const struct cli_command commands[] = {
    {"run", "run an agent in a fresh sandbox and stream what it does", cli_run_main},
    {"exec", "run a shell command in a sandbox", cli_exec_main},
    {"parse", "print the events of a recorded agent stream", cli_parse_main},
    {"batch", "run a task manifest across many sandboxes (and merge shards)", cli_batch_main},
    {"mock-llm", "serve a scripted model on loopback for real agent CLIs", cli_mockllm_main},
    {"checkpoint", "create, list, download, restore, verify and gc checkpoints",
     cli_checkpoint_main},
    {"parse", "print the events of a recorded agent stream", cli_parse_main},
    {"mock-llm", "serve a scripted model on loopback for real agent CLIs", cli_mockllm_main},
    {NULL, NULL, NULL},
};

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "evolve %s: ", cmd);
    if (fmt) {
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    } else {
        fputs(evolve_error_last()->message, stderr);
    }
    fputc('\n', stderr);
    return 1;
}

static void usage(FILE *to)
{
    const struct cli_command *c;

    fprintf(to, "usage: evolve [--version] [--help] <command> [<args>]\n\n"
                "Run coding agents in parallel sandboxes and stream what they do.\n\n"
                "commands:\n");
    for (c = commands; c->name; c++)
        fprintf(to, "  %-12s %s\n", c->name, c->summary);
    fprintf(to, "\n'evolve <command> --help' describes one command.\n");
}

int main(int argc, char **argv)
{
    const struct cli_command *c;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("evolve %s\n", evolve_version());
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (c = commands; c->name; c++)
        if (!strcmp(c->name, argv[1]))
            return c->main(argc - 1, argv + 1);
    fprintf(stderr, "evolve: '%s' is not an evolve command; see 'evolve --help'\n", argv[1]);
    return 2;
}
