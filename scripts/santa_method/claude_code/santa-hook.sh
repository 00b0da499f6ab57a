#!/bin/sh
# santa-hook: runs `santa hook NAME` from the repository's environment.
# Written by `santa init`. If the helper cannot be found it refuses santa's
# own agents in the hook protocol (exit 0), because Claude Code lets a call
# through when a hook command fails.
name=${1:-}
for py in "${SANTA_PYTHON:-}" "${CLAUDE_PROJECT_DIR:-.}/.venv/bin/python" python3; do
  [ -n "$py" ] || continue
  if "$py" -c 'import santa_method' >/dev/null 2>&1; then
    exec "$py" -m santa_method hook "$name"
  fi
done
if command -v santa >/dev/null 2>&1; then
  exec santa hook "$name"
fi
input=$(cat)
reason="santa-method is not installed in this repository's environment: pip install santa-method (or set SANTA_PYTHON)."
sp='[[:space:]]*'
case $name in
  pretooluse-agent)
    if printf '%s' "$input" | grep -Eq "\"subagent_type\"$sp:$sp\"santa-(reviewer|fixer)\""; then
      printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "%s"}}\n' "$reason"
    fi ;;
  subagent-stop)
    if printf '%s' "$input" | grep -Eq "\"agent_type\"$sp:$sp\"santa-reviewer\"" &&
      ! printf '%s' "$input" | grep -Eq "\"stop_hook_active\"$sp:${sp}true"; then
      printf '{"decision": "block", "reason": "%s"}\n' "$reason"
    fi ;;
esac
exit 0
