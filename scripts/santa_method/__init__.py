"""santa-method: verify AI output with independent reviewers and a gate enforced by code.

Nothing is imported here, so that `import santa_method` stays cheap for the
hooks and the CLI's cold start and never pulls in a model SDK. The Python
API is `santa_method.headless.api` (`verify`, `verify_sync`, `VerifyResult`);
ARCHITECTURE.md says what lives where.
"""

from __future__ import annotations

__version__ = "0.1.0"
# How to install the package while it is not on PyPI (a name lookup finds
# nothing): every message that tells someone to install it says this.
INSTALL_HINT = (
    "install santa-method from a clone (pip install /path/to/santa-method) "
    "or from git (pip install 'santa-method @ git+URL')"
)
