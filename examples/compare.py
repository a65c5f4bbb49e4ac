"""Moved to the package fairseq_wean.compare (fairseq-wean-compare); kept for the commands in docs/results/*.md."""
from fairseq_wean.compare.cli import cli_main

cli_main()
