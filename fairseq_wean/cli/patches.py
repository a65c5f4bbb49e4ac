"""``python -m fairseq_wean.cli.patches``: what the plugin's import did to this fairseq, one line
per patch: applied (and the bug it found), or not applied (and why). See docs/fairseq-patches.md.
"""
import fairseq
import torch

import fairseq_wean  # noqa: F401  (its import applies the patches)
from fairseq_wean import patching


def cli_main():
    print("fairseq {}, torch {}".format(getattr(fairseq, "__version__", "?"), torch.__version__))
    for line in patching.status_lines():
        print(line)


if __name__ == "__main__":
    cli_main()
