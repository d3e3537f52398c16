#!/usr/bin/env python3
"""check_run.py AGENT SCENARIO RUNDIR: checks one `evolve run --json` of a real agent CLI against
`evolve mock-llm` (tests/e2e/run_real_agents.sh). RUNDIR holds events.jsonl (stdout: OutputEvent
JSONL), raw.jsonl (--raw: the agent's stdout), out/ (--out: the output files) and logs/ (the
session log dir). Prints nothing and exits 0 when every check passes; else one line per failure
and exits 1."""
import json
import os
import sys

# toolName of the shell tool, verbatim as each CLI prints it in its stream.
SHELL_TOOL = {
    "claude": "Bash",
    "codex": "command_execution",
    "gemini": "run_shell_command",
    "qwen": "run_shell_command",
    "opencode": "bash",
}
# The scenario's final text (data/scenarios/*.json), a prefix of it.
FINAL_TEXT = {"hello": "Hello from evolv", "tool": "Done: I ran the "}


def main():
    agent, scen, rundir = sys.argv[1:4]
    fails = []
    events = []
    with open(os.path.join(rundir, "events.jsonl"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                ev = json.loads(line)
                kind = ev["update"]["sessionUpdate"]
            except (ValueError, KeyError, TypeError):
                fails.append("events.jsonl line %d is not an OutputEvent: %.120s" % (n, line))
                continue
            events.append((kind, ev["update"]))
    kinds = [k for k, _ in events]
    text = "".join(u.get("content", {}).get("text", "") for k, u in events
                   if k == "agent_message_chunk")
    if "agent_message_chunk" not in kinds:
        fails.append("no agent_message_chunk event")
    elif FINAL_TEXT.get(scen, "") not in text:
        fails.append("message text lacks %r: %.200r" % (FINAL_TEXT.get(scen), text))
    if "usage" not in kinds:
        fails.append("no usage event")
    if "unknown" in kinds:
        u = events[kinds.index("unknown")][1]
        fails.append("%d unknown event(s), first: %.200s" % (kinds.count("unknown"),
                                                            u.get("raw", "")))
    try:
        with open(os.path.join(rundir, "raw.jsonl"), encoding="utf-8") as f:
            raw = f.read()
    except OSError as e:
        raw = ""
        fails.append("no raw stdout: %s" % e)
    if scen == "tool":
        calls = [(i, u) for i, (k, u) in enumerate(events) if k == "tool_call"]
        want = SHELL_TOOL.get(agent)
        shell = [(i, u) for i, u in calls if u.get("toolName") == want]
        if not shell:
            fails.append("no tool_call with toolName %r (saw %r)" %
                         (want, [u.get("toolName") for _, u in calls]))
        elif '"%s"' % want not in raw:
            fails.append("toolName %r is not verbatim from the raw stream" % want)
        for i, call in shell[:1]:
            done = [u for k, u in events[i + 1:] if k == "tool_call_update"
                    and u.get("toolCallId") == call.get("toolCallId")
                    and u.get("status") == "completed"]
            if not done:
                fails.append("tool_call %s has no completed tool_call_update after it" %
                             call.get("toolCallId"))
        try:
            with open(os.path.join(rundir, "out", "hello.txt"), encoding="utf-8") as f:
                got = f.read()
        except OSError as e:
            got = "(%s)" % e
        if got != "hi\n":
            fails.append("output/hello.txt is %r, not 'hi\\n'" % got)
    logs = sorted(os.listdir(os.path.join(rundir, "logs"))) if os.path.isdir(
        os.path.join(rundir, "logs")) else []
    if len(logs) != 1:
        fails.append("expected one session log, found %r" % logs)
    else:
        with open(os.path.join(rundir, "logs", logs[0]), encoding="utf-8") as f:
            log = f.read().splitlines()
        if not log or not log[0].startswith('{"_meta"') or ('"agent":"%s"' % agent) not in log[0]:
            fails.append("session log does not start with this agent's _meta: %.200s" %
                         (log[0] if log else ""))
        if not any(line.startswith('{"_prompt"') for line in log):
            fails.append("session log has no _prompt line")
        # Every raw stdout line is in the log, verbatim and in order.
        pos = 0
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                pos = log.index(line, pos) + 1
            except ValueError:
                fails.append("raw line missing from the session log: %.160s" % line)
                break
        if "sk-mock" in "\n".join(log) and "sk-mock" not in raw:
            fails.append("the API key is written in the session log")
    for f in fails:
        print(f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
