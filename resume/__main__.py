import sys

from resume.cli import main

sys.exit(main())
