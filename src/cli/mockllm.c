/* mockllm.c — `evolve mock-llm`: serve a scripted model on loopback until SIGINT/SIGTERM and
 * print what each agent CLI needs to use it. The server itself is src/mockllm.
 * Threads: main only (the server runs on its own threads; signals are taken with sigwait). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "evolve/evolve.h"
#include "mockllm/mockllm.h"

static void usage(FILE *to)
{
    fprintf(to,
            "usage: evolve mock-llm --scenario FILE|NAME [--port N] [--host 127.0.0.1]\n"
            "                       [--log FILE] [--log-bodies] [--scenario-dir DIR] [--quiet]\n\n"
            "Serve a scripted model (Anthropic Messages, OpenAI Chat Completions and Responses,\n"
            "Gemini) on loopback for real agent CLIs, offline. --port 0 picks a free port; the\n"
            "first line printed is always 'listening on http://HOST:PORT'. A request under\n"
            "/s/<name>/ (or with header X-Mock-Scenario: <name>) uses scenario <name> instead.\n"
            "Scenario names: hello tool edit multi-tool error slow (data/scenarios). Format and\n"
            "the exact command line of each CLI: docs/mock-llm.md. Stops on SIGINT/SIGTERM.\n");
}

static void print_env(const char *base)
{
    printf("\n# claude\n"
           "export ANTHROPIC_BASE_URL=%s ANTHROPIC_API_KEY=sk-mock IS_SANDBOX=1 \\\n"
           "  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 "
           "DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1\n"
           "claude -p PROMPT --output-format stream-json --verbose --permission-mode "
           "bypassPermissions\n",
           base);
    printf("\n# codex: CODEX_HOME=$HOME/.codex FAKE_API_KEY=sk-mock, and $CODEX_HOME/config.toml:\n"
           "#   model = \"gpt-5.5\"\n#   model_provider = \"mock\"\n"
           "#   approval_policy = \"never\"\n#   sandbox_mode = \"danger-full-access\"\n"
           "#   check_for_update_on_startup = false\n#   [model_providers.mock]\n"
           "#   name = \"mock\"\n#   base_url = \"%s/v1\"\n#   env_key = \"FAKE_API_KEY\"\n"
           "#   wire_api = \"responses\"\n#   request_max_retries = 0\n"
           "#   stream_max_retries = 0\n#   [features]\n#   plugins = false\n"
           "#   [analytics]\n#   enabled = false\n#   [feedback]\n#   enabled = false\n"
           "#   [otel]\n#   exporter = \"none\"\n"
           "codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox "
           "PROMPT </dev/null\n",
           base);
    printf("\n# gemini (~/.gemini/settings.json: security.auth.selectedType \"gemini-api-key\", "
           "security.folderTrust.enabled false)\n"
           "export GEMINI_API_KEY=sk-mock GOOGLE_GEMINI_BASE_URL=%s GEMINI_CLI_NO_RELAUNCH=true\n"
           "gemini -p PROMPT --output-format stream-json -m gemini-2.5-pro --approval-mode yolo\n",
           base);
    printf("\n# qwen (~/.qwen/settings.json: security.auth.selectedType \"openai\", "
           "memory.enableManagedAutoMemory false, memory.enableManagedAutoDream false)\n"
           "export OPENAI_API_KEY=sk-mock OPENAI_BASE_URL=%s/v1 OPENAI_MODEL=mock-model\n"
           "qwen -p PROMPT --output-format stream-json --approval-mode yolo --auth-type openai\n",
           base);
    printf("\n# opencode ($XDG_CONFIG_HOME/opencode/opencode.json, plus a stub package.json,\n"
           "# package-lock.json and node_modules/ there so it installs no plugin):\n"
           "#   {\"model\": \"mock/mock-model\", \"small_model\": \"mock/mock-model\",\n"
           "#    \"provider\": {\"mock\": {\"npm\": \"@ai-sdk/openai-compatible\", \"options\":\n"
           "#      {\"baseURL\": \"%s/v1\", \"apiKey\": \"sk-mock\"},\n"
           "#      \"models\": {\"mock-model\": {\"tool_call\": true}}}},\n"
           "#    \"permission\": {\"bash\": \"allow\", \"edit\": \"allow\"}}\n"
           "export OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 "
           "OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_SHARE=1\n"
           "opencode run --format json -m mock/mock-model PROMPT\n",
           base);
}

int cli_mockllm_main(int argc, char **argv)
{
    static const struct option opts[] = {{"scenario", required_argument, NULL, 's'},
                                         {"port", required_argument, NULL, 'p'},
                                         {"host", required_argument, NULL, 'H'},
                                         {"log", required_argument, NULL, 'l'},
                                         {"log-bodies", no_argument, NULL, 'b'},
                                         {"scenario-dir", required_argument, NULL, 'd'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct mock_config cfg = {0};
    struct mock_server *srv;
    sigset_t set;
    char base[128], *end;
    int c, sig = 0, quiet = 0;
    long port;

    cfg.host = "127.0.0.1";
    optind = 1;
    while ((c = getopt_long(argc, argv, "s:p:H:l:bd:qh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            cfg.scenario = optarg;
            break;
        case 'p':
            errno = 0;
            port = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || port < 0 || port > 65535)
                return cli_fail("mock-llm", "--port %s: expected 0..65535", optarg);
            cfg.port = (uint16_t)port;
            break;
        case 'H':
            cfg.host = optarg;
            break;
        case 'l':
            cfg.log_path = optarg;
            break;
        case 'b':
            cfg.log_bodies = 1;
            break;
        case 'd':
            cfg.scenario_dir = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || !cfg.scenario) {
        usage(stderr);
        return 2;
    }
    /* Block the stop signals before the server's threads exist, so they inherit the mask and
     * only sigwait below ever takes them. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (mock_server_start(&srv, &cfg) != 0)
        return cli_fail("mock-llm", NULL);
    snprintf(base, sizeof(base), "http://%s:%u",
             strcmp(cfg.host, "localhost") ? cfg.host : "127.0.0.1",
             (unsigned)mock_server_port(srv));
    printf("listening on %s\n", base);
    if (!quiet)
        print_env(base);
    fflush(stdout);
    sigwait(&set, &sig);
    fprintf(stderr, "evolve mock-llm: %s, stopping after %llu requests\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)mock_server_requests(srv));
    mock_server_stop(srv);
    return 0;
}
