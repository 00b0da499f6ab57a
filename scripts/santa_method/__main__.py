import sys

from santa_method.launch import main

sys.exit(main())
