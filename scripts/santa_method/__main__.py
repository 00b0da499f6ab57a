import sys

from santa_method.cli import main

sys.exit(main())
