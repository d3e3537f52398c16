/* An RPC agent keeps stdin open for the whole run: the embedder answers it with
 * evolve_write_stdin (here: a permission reply built by evolve_autohand_permission_reply, sent to
 * a stand-in `autohand` on PATH that echoes each stdin line back on stdout). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "evolve/evolve.h"
#include "support/support.h"

TestSuite(core_session_stdin, .timeout = 60);

static const char fake_autohand[] = "#!/bin/sh\n"
                                    "# reads the prompt request, asks, echoes the reply, exits\n"
                                    "read -r prompt\n"
                                    "echo '{\"jsonrpc\":\"2.0\",\"method\":\"asking\"}'\n"
                                    "read -r reply\n"
                                    "echo \"$reply\"\n";

Test(core_session_stdin, rpc_agent_gets_replies_on_stdin)
{
    char home[512], bin[600], path[4096], prog[700];
    evolve_runtime_t *rt;
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_subscription_t *sub;
    evolve_result_t *res;
    evolve_t *ev;
    char *reply = NULL;
    bool asked = false, echoed = false, ended = false;
    uint64_t deadline;

    ts_mkdtemp(home, sizeof(home), "stdin");
    setenv("EVOLVE_HOME", home, 1);
    snprintf(bin, sizeof(bin), "%s/bin", home);
    snprintf(prog, sizeof(prog), "%s/autohand", bin);
    ts_write_file(prog, fake_autohand, strlen(fake_autohand));
    chmod(prog, 0755);
    setenv("EVOLVE_SANDBOX_BINDS", bin, 1);
    snprintf(path, sizeof(path), "%s:%s", bin, getenv("PATH"));
    setenv("PATH", path, 1);
    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0);
    o.agent = "autohand";
    o.ask_permission = true;
    cr_assert_eq(evolve_new(&ev, rt, &o), 0, "%s", evolve_error_last()->message);
    so.capacity = 4096;
    cr_assert_eq(evolve_subscribe(&sub, ev, &so), 0);
    ro.prompt = "do it";
    ro.background = true;
    cr_assert_eq(evolve_run(&res, ev, &ro), 0, "%s", evolve_error_last()->message);
    evolve_result_free(res);
    deadline = ts_now_ms() + 20000;
    while (!ended && ts_now_ms() < deadline) {
        evolve_event_t *e;
        const char *j;

        if (evolve_subscription_poll(sub, 200, &e) < 0)
            continue;
        j = evolve_event_json(e, NULL);
        if (!asked && evolve_event_kind(e) == EVOLVE_EVENT_STDOUT && strstr(j, "asking")) {
            asked = true;
            cr_assert_eq(
                evolve_autohand_permission_reply(&reply, "req-1", EVOLVE_PERMISSION_ALLOW_ONCE), 0,
                "%s", evolve_error_last()->message);
            cr_assert_eq(evolve_write_stdin(ev, reply, strlen(reply)), 0, "%s",
                         evolve_error_last()->message);
        } else if (asked && evolve_event_kind(e) == EVOLVE_EVENT_STDOUT && strstr(j, "req-1")) {
            echoed = true;
        } else if (evolve_event_kind(e) == EVOLVE_EVENT_LIFECYCLE && strstr(j, "run_background_")) {
            ended = true;
        }
        evolve_event_unref(e);
    }
    cr_assert(asked, "the agent never asked");
    cr_assert(echoed, "the reply never reached the agent's stdin");
    cr_assert(ended, "the run never ended");
    evolve_autohand_reply_free(reply);
    evolve_subscription_free(sub);
    cr_assert_eq(evolve_write_stdin(ev, "x\n", 2), EVOLVE_ENOTFOUND, "no run: nowhere to write");
    evolve_free(ev);
    evolve_runtime_free(rt);
    ts_rmtree(home);
}
