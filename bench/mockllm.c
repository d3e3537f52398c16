/* bench/mockllm.c — how many agent requests evolve mock-llm answers per second: C clients
 * (libcurl easy, keep-alive, one thread each) post claude-sized Anthropic streaming requests
 * (64 KiB body, a Bash tool) in the tool scenario; C = 1, 8, 32. The baseline is the Python
 * fakemodel server (tools/fakemodel/server.py --delay 0) doing the same, when it is available.
 * Prints one JSON object per figure on stdout, human text on stderr. */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evolve/common.h"
#include "mockllm/mockllm.h"

#define RUNS       5
#define REQUESTS   320
#define BODY_BYTES (64 * 1024)
#define FAKEMODEL  "/work/shared/tools/fakemodel/server.py"

static char *body;

struct client {
    uint16_t port;
    int requests;
    size_t bytes;
    int errors;
};

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static size_t count(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += sz * n;
    return sz * n;
}

static void *client(void *arg)
{
    struct client *c = arg;
    CURL *h = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    char url[128];
    long status;
    int i;

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/messages", (unsigned)c->port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->bytes);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    for (i = 0; i < c->requests; i++) {
        if (curl_easy_perform(h) != CURLE_OK ||
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
            c->errors++;
    }
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return NULL;
}

/* One run: requests/s with `conc` clients; *bytes gets the bytes received. */
static double run_once(uint16_t port, int conc, int nreq, size_t *bytes, int *errors)
{
    struct client c[32];
    pthread_t th[32];
    uint64_t t0 = now_us();
    int i;

    for (i = 0; i < conc; i++) {
        c[i] = (struct client){port, nreq / conc, 0, 0};
        pthread_create(&th[i], NULL, client, &c[i]);
    }
    *bytes = 0;
    for (i = 0; i < conc; i++) {
        pthread_join(th[i], NULL);
        *bytes += c[i].bytes;
        *errors += c[i].errors;
    }
    return (double)(nreq / conc * conc) * 1e6 / (double)(now_us() - t0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median, min and max of RUNS runs; returns the median. */
static double measure(uint16_t port, int conc, int nreq, double *mn, double *mx, size_t *bytes,
                      int *errors)
{
    double v[RUNS];
    int i;

    run_once(port, conc, nreq, bytes, errors); /* warm-up: connections, page cache */
    for (i = 0; i < RUNS; i++)
        v[i] = run_once(port, conc, nreq, bytes, errors);
    qsort(v, RUNS, sizeof(v[0]), cmp);
    *mn = v[0];
    *mx = v[RUNS - 1];
    return v[RUNS / 2];
}

/* Starts the Python fakemodel on a free port; returns its pid (0 when unavailable). */
static pid_t start_fakemodel(uint16_t *port)
{
    char pf[] = "/tmp/evolve-bench-fakemodel-XXXXXX";
    char pfile[64], buf[16];
    struct stat st;
    FILE *f;
    pid_t pid;
    int fd, i;

    if (stat(FAKEMODEL, &st) != 0 || (fd = mkstemp(pf)) < 0)
        return 0;
    close(fd);
    unlink(pf);
    snprintf(pfile, sizeof(pfile), "%s", pf);
    pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr))
            _exit(127);
        execlp("python3", "python3", FAKEMODEL, "--port", "0", "--port-file", pfile, "--scenario",
               "tool", "--tool-trigger", "", "--delay", "0", "--log", "/dev/null", (char *)NULL);
        _exit(127);
    }
    for (i = 0; i < 200; i++) {
        if ((f = fopen(pfile, "r"))) {
            if (fgets(buf, sizeof(buf), f)) {
                fclose(f);
                unlink(pfile);
                *port = (uint16_t)strtol(buf, NULL, 10);
                return pid;
            }
            fclose(f);
        }
        usleep(50000);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return 0;
}

int main(void)
{
    static const int concs[] = {1, 8, 32};
    struct mock_config cfg = {0};
    struct mock_server *srv;
    uint16_t fport = 0;
    pid_t fpid;
    size_t i, n;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    body = malloc(BODY_BYTES + 1024);
    n = (size_t)snprintf(body, 1024,
                         "{\"model\":\"claude-opus-4-8\",\"stream\":true,\"max_tokens\":64000,"
                         "\"tools\":[{\"name\":\"Bash\",\"description\":\"Executes a bash command"
                         "\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"command\":{"
                         "\"type\":\"string\"},\"description\":{\"type\":\"string\"}},"
                         "\"required\":[\"command\"]}}],\"messages\":[{\"role\":\"user\","
                         "\"content\":\"hello.txt ");
    for (i = 0; i < BODY_BYTES; i++)
        body[n++] = (char)('a' + i % 26);
    memcpy(body + n, "\"}]}", 5);

    cfg.scenario = "tool";
    cfg.host = "127.0.0.1";
    if (mock_server_start(&srv, &cfg) != 0) {
        fprintf(stderr, "bench mockllm: %s\n", evolve_error_last()->message);
        return 1;
    }
    fpid = start_fakemodel(&fport);
    fprintf(stderr, "bench mockllm: %d requests of %d KiB per run, %d runs; baseline %s\n",
            REQUESTS, BODY_BYTES / 1024, RUNS, fpid ? "python fakemodel" : "unavailable");
    for (i = 0; i < sizeof(concs) / sizeof(concs[0]); i++) {
        double mn, mx, med, bmn, bmx, bmed = 0;
        size_t bytes = 0, bbytes = 0;
        int errors = 0, berrors = 0;

        med = measure(mock_server_port(srv), concs[i], REQUESTS, &mn, &mx, &bytes, &errors);
        if (fpid)
            /* the baseline is ~20x slower: fewer requests per run keep the bench short */
            bmed = measure(fport, concs[i], REQUESTS / 5, &bmn, &bmx, &bbytes, &berrors);
        printf("{\"bench\":\"mockllm\",\"figure\":\"requests_per_second_c%d\",\"unit\":\"req/s\","
               "\"median\":%.1f,\"min\":%.1f,\"max\":%.1f,\"runs\":%d,\"work\":\"%d Anthropic SSE "
               "requests of %d KiB, tool scenario, %d keep-alive clients\",\"checksum\":%zu,"
               "\"errors\":%d",
               concs[i], med, mn, mx, RUNS, REQUESTS, BODY_BYTES / 1024, concs[i], bytes, errors);
        if (fpid)
            printf(",\"baseline\":\"python tools/fakemodel/server.py --delay 0\","
                   "\"baseline_median\":%.1f,\"ratio\":%.2f",
                   bmed, bmed > 0 ? med / bmed : 0);
        printf("}\n");
        fflush(stdout);
        fprintf(stderr, "  c=%-2d mock-llm %.0f req/s (min %.0f, max %.0f)%s", concs[i], med, mn,
                mx, fpid ? "" : "\n");
        if (fpid)
            fprintf(stderr, ", fakemodel %.0f req/s: x%.1f\n", bmed, bmed > 0 ? med / bmed : 0);
    }
    if (fpid) {
        kill(fpid, SIGTERM);
        waitpid(fpid, NULL, 0);
    }
    mock_server_stop(srv);
    free(body);
    curl_global_cleanup();
    return 0;
}
