/* Tool resolution of evolve mock-llm: which advertised tool carries out a scripted call and with
 * which arguments — write through Write/write_file with an absolute path from the agent's cwd,
 * through apply_patch, or through the shell (run here for real to check the quoting); edits the
 * same way; and the cwd markers of each CLI. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evolve/common.h"
#include "mockllm/mock_impl.h"
#include "support/support.h"

TestSuite(mockllm_tools, .timeout = 30);

static json_t *load_view(struct mock_view *v, const char *tools_json)
{
    json_t *tools = json_loads(tools_json, 0, NULL), *t;
    size_t i;

    cr_assert_not_null(tools);
    memset(v, 0, sizeof(*v));
    json_array_foreach(tools, i, t)
    {
        mock_add_tool(v, json_string_value(json_object_get(t, "name")),
                      json_string_value(json_object_get(t, "description")),
                      json_object_get(t, "schema"),
                      json_object_get(t, "custom") ? MOCK_TOOL_CUSTOM : MOCK_TOOL_FUNCTION);
    }
    return tools;
}

static void block_free(struct mock_block *b)
{
    free(b->text);
    free(b->tool_name);
    free(b->input);
    free(b->args_json);
    json_decref(b->args);
}

/* Runs `cmd` with /bin/sh -c in `dir`; returns the exit status. */
static int run_sh(const char *dir, const char *cmd)
{
    pid_t pid = fork();
    int st = 0;

    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(mockllm_tools, write_uses_write_tool_with_absolute_path)
{
    struct mock_view v;
    struct mock_block b = {0};
    struct mock_call c = {MOCK_CALL_WRITE, NULL, "output/a.txt", "hi\n", NULL, NULL};
    json_t *tools = load_view(
        &v, "[{\"name\":\"Bash\",\"schema\":{\"properties\":{\"command\":{\"type\":\"string\"}}}},"
            "{\"name\":\"write\",\"schema\":{\"properties\":{\"filePath\":{\"type\":\"string\"},"
            "\"content\":{\"type\":\"string\"}},\"required\":[\"content\",\"filePath\"]}}]");

    snprintf(v.cwd, sizeof(v.cwd), "/home/user/ws");
    cr_assert_eq(mock_resolve_call(&b, &c, &v), 0);
    cr_assert_str_eq(b.tool_name, "write");
    cr_assert_str_eq(json_string_value(json_object_get(b.args, "filePath")),
                     "/home/user/ws/output/a.txt");
    cr_assert_str_eq(json_string_value(json_object_get(b.args, "content")), "hi\n");
    block_free(&b);
    json_decref(tools);
}

Test(mockllm_tools, write_and_edit_through_the_shell_when_no_file_tools)
{
    char dir[512], path[600];
    struct mock_view v;
    struct mock_block b = {0};
    const char *tricky = "it's \"quoted\" $HOME `x` \\ & | 100%\nline2\n";
    struct mock_call w = {MOCK_CALL_WRITE, NULL, "out dir/a.txt", (char *)tricky, NULL, NULL};
    struct mock_call e = {MOCK_CALL_EDIT,     NULL,         "out dir/a.txt", NULL,
                          "$HOME `x` \\ & |", "a/b & c|d.*"};
    json_t *tools = load_view(&v, "[{\"name\":\"run_shell_command\",\"schema\":{\"properties\":{"
                                  "\"command\":{\"type\":\"string\"}}}}]");
    char *got;

    ts_mkdtemp(dir, sizeof(dir), "mocktools");
    cr_assert_eq(mock_resolve_call(&b, &w, &v), 0);
    cr_assert_str_eq(b.tool_name, "run_shell_command");
    cr_assert_eq(run_sh(dir, json_string_value(json_object_get(b.args, "command"))), 0, "%s",
                 json_string_value(json_object_get(b.args, "command")));
    block_free(&b);
    snprintf(path, sizeof(path), "%s/out dir/a.txt", dir);
    got = ts_read_file(path, NULL);
    cr_assert_str_eq(got, tricky);
    free(got);

    memset(&b, 0, sizeof(b));
    cr_assert_eq(mock_resolve_call(&b, &e, &v), 0);
    cr_assert_eq(run_sh(dir, json_string_value(json_object_get(b.args, "command"))), 0, "%s",
                 json_string_value(json_object_get(b.args, "command")));
    block_free(&b);
    got = ts_read_file(path, NULL);
    cr_assert_str_eq(got, "it's \"quoted\" a/b & c|d.* 100%\nline2\n");
    free(got);
    ts_rmtree(dir);
    json_decref(tools);
}

Test(mockllm_tools, edit_tool_and_apply_patch)
{
    struct mock_view v;
    struct mock_block b = {0};
    struct mock_call e = {MOCK_CALL_EDIT, NULL, "/abs/f.c", NULL, "int a;", "int b;"};
    json_t *tools = load_view(
        &v, "[{\"name\":\"replace\",\"schema\":{\"properties\":{\"file_path\":{\"type\":"
            "\"string\"},\"old_string\":{\"type\":\"string\"},\"new_string\":{\"type\":"
            "\"string\"},\"instruction\":{\"type\":\"string\"}},\"required\":[\"file_path\","
            "\"old_string\",\"new_string\",\"instruction\"]}}]");

    cr_assert_eq(mock_resolve_call(&b, &e, &v), 0);
    cr_assert_str_eq(b.tool_name, "replace");
    cr_assert_str_eq(json_string_value(json_object_get(b.args, "file_path")), "/abs/f.c");
    cr_assert_str_eq(json_string_value(json_object_get(b.args, "old_string")), "int a;");
    cr_assert_str_eq(json_string_value(json_object_get(b.args, "new_string")), "int b;");
    cr_assert_not_null(json_string_value(json_object_get(b.args, "instruction")));
    block_free(&b);
    json_decref(tools);

    tools = load_view(&v, "[{\"name\":\"apply_patch\",\"custom\":true}]");
    memset(&b, 0, sizeof(b));
    cr_assert_eq(mock_resolve_call(&b, &e, &v), 0);
    cr_assert_eq(b.tool_kind, MOCK_TOOL_CUSTOM);
    cr_assert_str_eq(b.input, "*** Begin Patch\n*** Update File: /abs/f.c\n@@\n-int a;\n+int b;\n"
                              "*** End Patch\n");
    block_free(&b);
    json_decref(tools);

    tools = load_view(&v, "[{\"name\":\"read_file\",\"schema\":{\"properties\":{\"path\":{}}}}]");
    memset(&b, 0, sizeof(b));
    cr_assert_eq(mock_resolve_call(&b, &e, &v), EVOLVE_ENOTFOUND);
    json_decref(tools);
}

Test(mockllm_tools, shell_tool_preference_and_schema_shapes)
{
    struct mock_view v;
    struct mock_block b = {0};
    struct mock_call c = {MOCK_CALL_SHELL, "ls -la", NULL, NULL, NULL, NULL};
    json_t *tools = load_view(
        &v, "[{\"name\":\"shell\",\"schema\":{\"properties\":{\"command\":{\"type\":\"array\"},"
            "\"workdir\":{\"type\":\"string\"}}}},"
            "{\"name\":\"exec_command\",\"schema\":{\"properties\":{\"cmd\":{\"type\":\"string\"}},"
            "\"required\":[\"cmd\"]}}]");

    /* exec_command is preferred over shell (codex advertises both in some versions) */
    cr_assert_eq(mock_resolve_call(&b, &c, &v), 0);
    cr_assert_str_eq(b.tool_name, "exec_command");
    cr_assert_str_eq(b.args_json, "{\"cmd\":\"ls -la\"}");
    block_free(&b);
    json_decref(tools);

    tools = load_view(&v, "[{\"name\":\"shell\",\"schema\":{\"properties\":{\"command\":{"
                          "\"type\":[\"array\",\"null\"]}}}}]");
    memset(&b, 0, sizeof(b));
    cr_assert_eq(mock_resolve_call(&b, &c, &v), 0);
    cr_assert_str_eq(b.args_json, "{\"command\":[\"bash\",\"-lc\",\"ls -la\"]}");
    block_free(&b);
    json_decref(tools);
}

Test(mockllm_tools, cwd_markers_of_each_cli)
{
    static const char *const raw[] = {
        "x\\n - Primary working directory: /sandbox/claude/ws\\n - Is a git",
        "<environment_context>\\n  <cwd>/sandbox/codex/ws</cwd>",
        "<env>\\n  Working directory: /sandbox/opencode/ws\\n",
        "I'm currently working in the directory: /sandbox/qwen/ws\\nHere",
        "- **Workspace Directories:**\\n  - /sandbox/gemini/ws\\n- **Directory",
        NULL};
    static const char *const want[] = {"/sandbox/claude/ws", "/sandbox/codex/ws",
                                       "/sandbox/opencode/ws", "/sandbox/qwen/ws",
                                       "/sandbox/gemini/ws"};
    char out[256];
    size_t i;

    for (i = 0; raw[i]; i++) {
        mock_find_cwd(raw[i], strlen(raw[i]), out, sizeof(out));
        cr_assert_str_eq(out, want[i]);
    }
    mock_find_cwd("nothing here", 12, out, sizeof(out));
    cr_assert_str_eq(out, "");
}

Test(mockllm_tools, tokenizer_and_splitter)
{
    cr_assert_eq(mock_tokens(0), 0);
    cr_assert_eq(mock_tokens(1), 1);
    cr_assert_eq(mock_tokens(4), 1);
    cr_assert_eq(mock_tokens(5), 2);
    cr_assert_eq(mock_tokens(400), 100);
}
