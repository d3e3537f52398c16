/* cli/cli.h — the evolve command's subcommands. Each lives in its own src/cli/<name>.c, takes
 * argv after the subcommand name (argv[0] is the subcommand) and returns the process exit code. */
#ifndef EVOLVE_CLI_H
#define EVOLVE_CLI_H

struct cli_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

/* Prints "evolve <cmd>: <message>" on stderr, the message from evolve_error_last() when
 * `fmt` is NULL. Returns 1 for use as an exit code. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Subcommands, one file each: argv[0] is the subcommand name. */
int cli_run_main(int argc, char **argv);        /* run.c */
int cli_exec_main(int argc, char **argv);       /* run.c */
int cli_checkpoint_main(int argc, char **argv); /* checkpoint.c */
int cli_mockllm_main(int argc, char **argv);    /* mockllm.c */
int cli_parse_main(int argc, char **argv);      /* parse.c */
/* evolve parse --agent NAME [FILE|-] [--summary] (parse.c) */
int cli_parse_main(int argc, char **argv);
/* Subcommands (one file each). */
int cli_mockllm_main(int argc, char **argv);
/* evolve batch MANIFEST -o OUTDIR ... / evolve batch merge (batch.c) */
int cli_batch_main(int argc, char **argv);

#endif
