"""santa-method: verify AI output with independent reviewers and a gate enforced by code.

The public API is re-exported here lazily, so `import santa_method` stays
cheap for the CLI's cold start and never pulls in a model SDK.
"""

from __future__ import annotations

__version__ = "0.1.0"
