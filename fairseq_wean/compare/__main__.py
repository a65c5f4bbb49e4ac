"""``python -m fairseq_wean.compare``: the same as ``fairseq-wean-compare``."""
from fairseq_wean.compare.cli import cli_main

cli_main()
