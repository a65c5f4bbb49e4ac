"""``fairseq-wean-report``: one self-contained HTML page comparing systems' outputs on a test set.

:mod:`.build` computes the data (scores, token classes), :mod:`.render` writes the page.
"""
