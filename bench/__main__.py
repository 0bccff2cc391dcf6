import sys

from bench.scenarios.run import main

sys.exit(main())
