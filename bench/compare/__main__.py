import sys

from bench.compare.run import main

sys.exit(main())
