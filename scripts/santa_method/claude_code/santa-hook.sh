#!/bin/sh
# santa-hook: runs `santa hook NAME` from the repository's environment.
# Written by `santa init`. If the helper cannot be found, or it fails, this
# refuses in the hook protocol (exit 0), because Claude Code lets a call or
# a reply through when a hook command fails.
name=${1:-}
input=$(cat)

# Run the helper on the hook input and stop here if it finished. Its answer
# is printed only then: a crash part-way (a missing dependency, say) must
# end in the refusal below, not in half an answer or none. An interpreter
# without the package (or older than 3.11) exits 69: try the next one.
entry='import sys
sys.version_info >= (3, 11) or sys.exit(69)
try:
    from santa_method.launch import main
except ImportError:
    sys.exit(69)
sys.exit(main())'
found=
try() {
  out=$(printf '%s' "$input" | "$@" hook "$name")
  status=$?
  [ "$status" -ne 69 ] || return 0
  found=$1
  [ "$status" -eq 0 ] || return 0
  [ -z "$out" ] || printf '%s\n' "$out"
  exit 0
}

for py in "${SANTA_PYTHON:-}" "${CLAUDE_PROJECT_DIR:-.}/.venv/bin/python" python3; do
  [ -n "$py" ] && command -v -- "$py" >/dev/null 2>&1 || continue
  try "$py" -c "$entry"
  [ -z "$found" ] || break
done
if [ -z "$found" ] && command -v santa >/dev/null 2>&1; then
  try santa
fi

# The fail-closed answer of santa_method.claude_code.protocol.fail_closed,
# read from compact JSON with patterns (tests/test_launchers.py holds the
# two to the same answers).
if [ -n "$found" ]; then
  reason="santa-method's hook failed in this repository's environment; run the hook command by hand with the same input to see why."
else
  reason="santa-method is not installed in this repository's environment: @INSTALL_HINT@ into it, or set SANTA_PYTHON."
fi
sp='[[:space:]]*'
santa_agents='santa-method:reviewer|santa-reviewer|santa-method:fixer|santa-fixer'
reviewers='santa-method:reviewer|santa-reviewer'
deny() {
  printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "%s"}}\n' "$reason"
}
case $name in
  pretooluse-agent)
    # Refused unless the call names an agent type that is not santa's.
    if printf '%s' "$input" | grep -Eq "\"subagent_type\"$sp:$sp\"($santa_agents)\"" ||
      ! printf '%s' "$input" | grep -Eq "\"subagent_type\"$sp:$sp\""; then
      deny
    fi ;;
  pretooluse-guard)
    # A helper that ran and failed refuses; with no helper at all there is
    # no santa state to guard, and the session must keep working.
    if [ -n "$found" ]; then deny; else printf 'santa-hook: %s\n' "$reason" >&2; fi ;;
  subagent-stop)
    if printf '%s' "$input" | grep -Eq "\"agent_type\"$sp:$sp\"($reviewers)\"" &&
      ! printf '%s' "$input" | grep -Eq "\"stop_hook_active\"$sp:${sp}true"; then
      printf '{"decision": "block", "reason": "%s"}\n' "$reason"
    fi ;;
  *)
    deny ;;
esac
exit 0
