"""Console scripts: fairseq-wean-score, fairseq-wean-align-table, ..."""
