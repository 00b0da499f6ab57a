import sys

from santa_method.github.action import main

sys.exit(main())
