"""The Claude Code face: hooks and `santa init`."""
