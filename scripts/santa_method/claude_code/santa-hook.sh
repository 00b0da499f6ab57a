#!/bin/sh
# santa-hook: runs `santa hook NAME` from the repository's environment.
# Written by `santa init`. If the helper cannot be found, or it fails, this
# refuses santa's own agents in the hook protocol (exit 0), because Claude
# Code lets a call or a reply through when a hook command fails.
name=${1:-}
input=$(cat)

# Run the helper on the hook input and stop here if it finished. Its answer
# is printed only then: a crash part-way (a missing dependency, say) must
# end in the refusal below, not in half an answer or none.
try() {
  out=$(printf '%s' "$input" | "$@" hook "$name") || return 1
  [ -z "$out" ] || printf '%s\n' "$out"
  exit 0
}

reason="santa-method is not installed in this repository's environment: @INSTALL_HINT@ into it, or set SANTA_PYTHON."
found=
for py in "${SANTA_PYTHON:-}" "${CLAUDE_PROJECT_DIR:-.}/.venv/bin/python" python3; do
  [ -n "$py" ] || continue
  if "$py" -c 'import santa_method' >/dev/null 2>&1; then
    found=$py
    try "$py" -m santa_method
    break
  fi
done
if [ -z "$found" ] && command -v santa >/dev/null 2>&1; then
  found=santa
  try santa
fi
if [ -n "$found" ]; then
  reason="santa-method's hook failed in this repository's environment; run the hook command by hand with the same input to see why."
fi

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
